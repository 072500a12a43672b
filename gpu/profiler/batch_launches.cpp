#include "gpu/profiler/batch_launches.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "messages/evidence.hpp"

namespace kgym {

namespace {

std::string dims(const google::protobuf::RepeatedField<int32_t>& d) {
  std::string text;
  for (int i = 0; i < d.size(); ++i)
    text += (i ? "x" : "") + std::to_string(d.Get(i));
  return text.empty() ? "?" : text;
}

double gpu_ns(const KernelActivity& k) {
  return k.end_ns() > k.start_ns() ? static_cast<double>(k.end_ns() - k.start_ns()) : 0.0;
}

// A kernel, not a copy or a memset (their records carry these names).
bool is_kernel(const KernelActivity& k) { return k.name() != "[memcpy]" && k.name() != "[memset]"; }

void keep_least(double share, double* least) {
  if (*least < 0 || share < *least)
    *least = share;
}

// A launch as the rule tells them apart: the kernel, its grid and its block.
std::string launch_key(const KernelActivity& k) {
  return "'" + k.name().substr(0, 100) + "' grid " + dims(k.grid()) + " block " + dims(k.block());
}

// What some calls ran: the candidate's own kernels by name and by launch key, and GPU time, its
// own and all.
struct launches {
  std::set<std::string> own_names;
  std::map<std::string, int> own;
  double own_ns = 0, all_ns = 0;

  void add(const KernelActivity& k, bool is_own) {
    if (is_kernel(k))
      all_ns += gpu_ns(k);
    if (is_own) {
      own_names.insert(k.name());
      ++own[launch_key(k)];
      own_ns += gpu_ns(k);
    }
  }
};

// How a batch of k calls differs from k eval-mode calls (`eval`: what `calls` of them ran
// together), or "" where it does not.
std::string unlike_calls(const launches& batch, const launches& eval, int k, int calls) {
  char text[400];
  for (const auto& [key, n] : batch.own)
    if (!eval.own.count(key)) {
      std::snprintf(text, sizeof text, "%d launches of %s, a shape no eval-mode call launched", n, key.c_str());
      return text;
    }
  for (const auto& [key, total] : eval.own) {
    const double expected = static_cast<double>(total) * k / calls;
    const auto it = batch.own.find(key);
    const int n = it == batch.own.end() ? 0 : it->second;
    if (n < batch_launch_floor * expected) {
      std::snprintf(text, sizeof text, "%d launches of %s, where %d eval-mode calls launch %.4g", n, key.c_str(), k,
                    expected);
      return text;
    }
  }
  const double expected_ns = eval.own_ns * k / calls;
  if (batch.own_ns < batch_gpu_time_floor * expected_ns) {
    std::snprintf(text, sizeof text, "its kernels took %.3f ms of GPU time, where %d eval-mode calls take %.3f ms",
                  batch.own_ns / 1e6, k, expected_ns / 1e6);
    return text;
  }
  return "";
}

}  // namespace

batch_launches check_batch_launches(const checked_trace& trace, int calls_per_batch) {
  batch_launches found;
  launches eval;  // every eval-mode call's together; the candidate's own: those the trace attributed to it
  for (const auto& k : trace.kernels)
    if (k.phase().kind() == TRACE_EVAL)
      eval.add(k, k.generated());
  int eval_calls = 0;
  for (const auto& call : trace.phase_calls)
    eval_calls += call.kind() == TRACE_EVAL;
  if (eval.own_names.empty() || eval_calls == 0 || calls_per_batch < 1)
    return found;
  // The batch windows (a batch call to the next phase call), in order, and what each ran: one
  // pass over the kernels, each to the window it started in. A batch's launches are not
  // attributed, so the candidate's are those named like its eval-mode calls' own.
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  const auto& calls = trace.phase_calls;
  for (size_t i = 0; i < calls.size() && i < trace.phase_at_ns.size(); ++i)
    if (calls[i].kind() == TRACE_BATCH)
      windows.emplace_back(trace.phase_at_ns[i], i + 1 < trace.phase_at_ns.size() ? trace.phase_at_ns[i + 1] : UINT64_MAX);
  std::vector<launches> batches(windows.size());
  for (const auto& k : trace.kernels) {
    auto after = std::upper_bound(windows.begin(), windows.end(), k.start_ns(),
                                  [](uint64_t t, const std::pair<uint64_t, uint64_t>& w) { return t < w.first; });
    if (after != windows.begin() && k.start_ns() < (after - 1)->second)
      batches[after - 1 - windows.begin()].add(k, eval.own_names.count(k.name()) > 0);
  }
  const double per_batch = static_cast<double>(calls_per_batch) / eval_calls;  // eval-mode calls' figures to a batch's
  for (const auto& batch : batches) {
    if (eval.own_ns > 0)
      keep_least(batch.own_ns / (eval.own_ns * per_batch), &found.least_gpu_share);
    if (eval.all_ns > 0)
      keep_least(batch.all_ns / (eval.all_ns * per_batch), &found.least_gpu_share_all);
    const std::string unlike = unlike_calls(batch, eval, calls_per_batch, eval_calls);
    if (!unlike.empty() && found.unlike++ == 0)
      found.first_unlike = "batch " + std::to_string(found.batches) + ": " + unlike;
    ++found.batches;
  }
  return found;
}

void apply_batch_launches(const batch_launches& found, bool no_hacking_check, ExecResult* result) {
  if (found.least_gpu_share >= 0)
    result->set_batch_gpu_share(found.least_gpu_share);
  if (found.least_gpu_share_all >= 0)
    result->set_batch_gpu_share_all(found.least_gpu_share_all);
  if (result->verdict() != OK || found.unlike == 0)
    return;
  add_evidence(result, BATCH_UNLIKE_ITS_CALLS,
               std::to_string(found.unlike) + " of " + std::to_string(found.batches) +
                   " timed batches ran its kernels other than its calls did alone; " + found.first_unlike,
               "cupti");
  if (!no_hacking_check)
    mark_hacked(result, PHASE_TIMING,
                "the candidate's timed batches ran its kernels other than its calls do one at a time (work for "
                "several calls at once: it read the batch's later inputs ahead of their calls)");
}

}  // namespace kgym
