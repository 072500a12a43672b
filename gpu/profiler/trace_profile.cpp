#include "gpu/profiler/trace_profile.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "messages/evidence.hpp"
#include "messages/json.hpp"
#include "messages/trace_phase.hpp"

namespace kgym {

namespace {

double gpu_ms(const KernelActivity& k) { return k.end_ns() > k.start_ns() ? (k.end_ns() - k.start_ns()) / 1e6 : 0.0; }

bool candidate_phase(const PhaseCall& phase) { return phase.kind() == TRACE_TRAIN || phase.kind() == TRACE_EVAL; }

}  // namespace

ProfileReport profile_from_trace(const std::vector<KernelActivity>& kernels, int top) {
  ProfileReport report;
  report.set_evidence_source("cupti");
  report.set_kernels_seen(static_cast<int>(kernels.size()));
  double candidate_ms = 0, generated_ms = 0;
  std::map<std::pair<std::string, bool>, KernelShare> shares;
  auto& phase_ms = *report.mutable_phase_gpu_ms();
  for (const auto& k : kernels) {
    double ms = gpu_ms(k);
    phase_ms[trace_phase_name(k.phase())] += ms;
    if (!candidate_phase(k.phase()))
      continue;
    candidate_ms += ms;
    if (k.generated()) {
      generated_ms += ms;
      if (k.phase().kind() == TRACE_TRAIN)
        report.set_generated_launches_train(report.generated_launches_train() + 1);
      else
        report.set_generated_launches_eval(report.generated_launches_eval() + 1);
    }
    auto& share = shares[{k.name(), k.generated()}];
    share.set_name(k.name());
    share.set_generated(k.generated());
    share.set_launches(share.launches() + 1);
    share.set_gpu_ms(share.gpu_ms() + ms);
  }
  report.set_coverage(candidate_ms > 0 ? generated_ms / candidate_ms : 0.0);
  // Traced timing reps: the span of each rep's kernels.
  std::map<int, std::pair<uint64_t, uint64_t>> spans;
  for (const auto& k : kernels) {
    if (k.phase().kind() != TRACE_TIMED || k.phase().rep() < 0)
      continue;
    int rep = k.phase().rep();
    auto [it, fresh] = spans.try_emplace(rep, k.start_ns(), k.end_ns());
    if (!fresh) {
      it->second.first = std::min(it->second.first, k.start_ns());
      it->second.second = std::max(it->second.second, k.end_ns());
    }
  }
  for (const auto& [rep, span] : spans) {
    while (report.timed_rep_span_ms_size() < rep)
      report.add_timed_rep_span_ms(0.0);
    report.add_timed_rep_span_ms(span.second > span.first ? (span.second - span.first) / 1e6 : 0.0);
  }
  std::vector<KernelShare> sorted;
  for (auto& [key, share] : shares) {
    share.set_share(candidate_ms > 0 ? share.gpu_ms() / candidate_ms : 0.0);
    sorted.push_back(share);
  }
  std::sort(sorted.begin(), sorted.end(), [](const KernelShare& a, const KernelShare& b) {
    return a.gpu_ms() != b.gpu_ms() ? a.gpu_ms() > b.gpu_ms() : a.name() < b.name();
  });
  for (int i = 0; i < static_cast<int>(sorted.size()) && i < top; ++i)
    *report.add_top_kernels() = sorted[i];
  return report;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0.0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool kernels_outside_timed_region(const ProfileReport& profile, const ExecResult& result, std::string* detail) {
  int n = std::min(profile.timed_rep_span_ms_size(), result.traced_rep_ms_size());
  if (n == 0)
    return false;
  std::vector<double> spans(profile.timed_rep_span_ms().begin(), profile.timed_rep_span_ms().begin() + n);
  std::vector<double> events(result.traced_rep_ms().begin(), result.traced_rep_ms().begin() + n);
  double span = median(spans), event = median(events);
  char text[200];
  std::snprintf(text, sizeof text, "the candidate's kernels spanned %.3f ms of GPU time per call (median of %d), "
                "the timed region measured %.3f ms", span, n, event);
  *detail = text;
  // Kernels inside the region cannot span more than it; the slack covers clock granularity.
  return span > 1.2 * event + 0.02;
}

void apply_profile_verdict(const ProfileReport& profile, bool no_hacking_check, ExecResult* result) {
  *result->mutable_profile() = profile;
  std::string detail;
  if (result->verdict() == OK && kernels_outside_timed_region(profile, *result, &detail)) {
    add_evidence(result, WORK_OUTSIDE_TIMED_REGION,
                 detail + ": work on an unjoined stream, left running, or a tampered timer", "cupti");
    if (!no_hacking_check) {
      mark_hacked(result, PHASE_PROFILE, "GPU work outside the timed region (CUPTI trace)");
      return;
    }
  }
  auto candidate_ms = [&](TracePhase phase) {
    auto it = profile.phase_gpu_ms().find(trace_phase_name(phase_call(phase)));
    return it == profile.phase_gpu_ms().end() ? 0.0 : it->second;
  };
  if (result->verdict() != OK || candidate_ms(TRACE_TRAIN) + candidate_ms(TRACE_EVAL) <= 0)
    return;
  std::vector<std::string> silent;
  if (profile.generated_launches_train() == 0)
    silent.push_back("train");
  if (profile.generated_launches_eval() == 0)
    silent.push_back("eval");
  for (const auto& mode : silent)
    add_evidence(result, NO_GENERATED_KERNEL,
                 mode + " mode: GPU kernels ran, none launched from the candidate's own code", "cupti");
  if (!silent.empty() && !no_hacking_check)
    mark_hacked(result, PHASE_PROFILE, "no kernel of the candidate's own ran in " + silent.front() + " mode (CUPTI trace)");
}

namespace {

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The function name a kernel's symbol stands for: demangled, without arguments or scope.
std::string function_name(const std::string& symbol) {
  std::string name = symbol;
  int status = 0;
  if (char* demangled = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status)) {
    name = demangled;
    std::free(demangled);
  }
  name = name.substr(0, name.find('('));
  // A template's arguments and a function's return type ("void scale<float, 4>") go too.
  if (!name.empty() && name.back() == '>') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      depth += name[i] == '>' ? 1 : name[i] == '<' ? -1 : 0;
      if (depth == 0) {
        name.erase(i);
        break;
      }
    }
  }
  if (auto space = name.rfind(' '); space != std::string::npos)
    name = name.substr(space + 1);
  auto scope = name.rfind("::");
  return scope == std::string::npos ? name : name.substr(scope + 2);
}

bool names_identifier(const std::string& source, const std::string& name) {
  if (name.empty())
    return false;
  for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, at + 1)) {
    bool starts = at == 0 || !identifier_char(source[at - 1]);
    bool ends = at + name.size() == source.size() || !identifier_char(source[at + name.size()]);
    if (starts && ends)
      return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> unmark_generated_not_in_source(std::vector<KernelActivity>& kernels,
                                                        const std::string& candidate_source) {
  std::vector<std::string> unmarked;
  for (auto& k : kernels) {
    if (!k.generated() || names_identifier(candidate_source, function_name(k.name())))
      continue;
    k.set_generated(false);
    if (std::find(unmarked.begin(), unmarked.end(), k.name()) == unmarked.end())
      unmarked.push_back(k.name());
  }
  return unmarked;
}

}  // namespace kgym
