#include "gpu/profiler/trace_profile.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include "messages/json.hpp"

namespace kgym {

namespace {

double gpu_ms(const KernelActivity& k) { return k.end_ns() > k.start_ns() ? (k.end_ns() - k.start_ns()) / 1e6 : 0.0; }

bool candidate_phase(const std::string& phase) { return phase == "train" || phase == "eval"; }

}  // namespace

std::vector<KernelActivity> read_trace(const std::string& path, int* bad_lines) {
  std::vector<KernelActivity> kernels;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    KernelActivity k;
    if (from_json(line, &k).empty())
      kernels.push_back(std::move(k));
    else if (bad_lines)
      ++*bad_lines;
  }
  return kernels;
}

ProfileReport profile_from_trace(const std::vector<KernelActivity>& kernels, int top) {
  ProfileReport report;
  report.set_evidence_source("cupti");
  report.set_kernels_seen(static_cast<int>(kernels.size()));
  double candidate_ms = 0, generated_ms = 0;
  std::map<std::pair<std::string, bool>, KernelShare> shares;
  auto& phase_ms = *report.mutable_phase_gpu_ms();
  for (const auto& k : kernels) {
    double ms = gpu_ms(k);
    phase_ms[k.phase()] += ms;
    if (!candidate_phase(k.phase()))
      continue;
    candidate_ms += ms;
    if (k.generated()) {
      generated_ms += ms;
      if (k.phase() == "train")
        report.set_generated_launches_train(report.generated_launches_train() + 1);
      else
        report.set_generated_launches_eval(report.generated_launches_eval() + 1);
    }
    auto& share = shares[{k.name(), k.generated()}];
    share.set_name(k.name());
    share.set_generated(k.generated());
    share.set_phase("train+eval");
    share.set_launches(share.launches() + 1);
    share.set_gpu_ms(share.gpu_ms() + ms);
  }
  report.set_coverage(candidate_ms > 0 ? generated_ms / candidate_ms : 0.0);
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

void apply_profile_verdict(const ProfileReport& profile, bool no_hacking_check, ExecResult* result) {
  *result->mutable_profile() = profile;
  auto candidate_ms = [&](const char* phase) {
    auto it = profile.phase_gpu_ms().find(phase);
    return it == profile.phase_gpu_ms().end() ? 0.0 : it->second;
  };
  if (result->verdict() != OK || candidate_ms("train") + candidate_ms("eval") <= 0)
    return;
  std::vector<std::string> silent;
  if (profile.generated_launches_train() == 0)
    silent.push_back("train");
  if (profile.generated_launches_eval() == 0)
    silent.push_back("eval");
  for (const auto& mode : silent) {
    auto* e = result->add_evidence();
    e->set_kind("no_generated_kernel");
    e->set_detail(mode + " mode: GPU kernels ran, none launched from the candidate's own code");
    e->set_source("cupti");
  }
  if (!silent.empty() && !no_hacking_check) {
    result->set_verdict(HACKED);
    result->set_correct(false);
    result->set_failed_phase("profile");
    result->set_message("no kernel of the candidate's own ran in " + silent.front() + " mode (CUPTI trace)");
  }
}

}  // namespace kgym
