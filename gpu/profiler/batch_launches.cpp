#include "gpu/profiler/batch_launches.hpp"

#include <cstdio>
#include <map>
#include <set>

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

}  // namespace

batch_launches check_batch_launches(const checked_trace& trace, int calls_per_batch) {
  batch_launches found;
  std::set<std::string> own;             // the candidate's kernels, by name
  std::map<std::string, int> eval_sum;   // their launches over every eval-mode call
  double eval_ns = 0, eval_all_ns = 0;   // and their GPU time; every kernel's
  for (const auto& k : trace.kernels) {
    if (k.phase().kind() == TRACE_EVAL && is_kernel(k))
      eval_all_ns += gpu_ns(k);
    if (k.generated() && k.phase().kind() == TRACE_EVAL) {
      own.insert(k.name());
      ++eval_sum[launch_key(k)];
      eval_ns += gpu_ns(k);
    }
  }
  int eval_calls = 0;
  for (const auto& call : trace.phase_calls)
    eval_calls += call.kind() == TRACE_EVAL;
  if (own.empty() || eval_calls == 0 || calls_per_batch < 1)
    return found;
  const auto& calls = trace.phase_calls;
  for (size_t i = 0; i < calls.size() && i < trace.phase_at_ns.size(); ++i) {
    if (calls[i].kind() != TRACE_BATCH)
      continue;
    const uint64_t open = trace.phase_at_ns[i];
    const uint64_t close = i + 1 < trace.phase_at_ns.size() ? trace.phase_at_ns[i + 1] : UINT64_MAX;
    std::map<std::string, int> launched;
    double batch_ns = 0, batch_all_ns = 0;
    for (const auto& k : trace.kernels) {
      if (k.start_ns() < open || k.start_ns() >= close)
        continue;
      if (is_kernel(k))
        batch_all_ns += gpu_ns(k);
      if (own.count(k.name())) {
        ++launched[launch_key(k)];
        batch_ns += gpu_ns(k);
      }
    }
    std::string unlike;
    char text[400];
    for (const auto& [key, n] : launched)
      if (!eval_sum.count(key)) {
        std::snprintf(text, sizeof text, "%d launches of %s, a shape no eval-mode call launched", n, key.c_str());
        unlike = text;
        break;
      }
    for (auto it = eval_sum.begin(); unlike.empty() && it != eval_sum.end(); ++it) {
      const double expected = static_cast<double>(it->second) * calls_per_batch / eval_calls;
      const int n = launched.count(it->first) ? launched[it->first] : 0;
      if (n < batch_launch_floor * expected) {
        std::snprintf(text, sizeof text, "%d launches of %s, where %d eval-mode calls launch %.4g", n,
                      it->first.c_str(), calls_per_batch, expected);
        unlike = text;
      }
    }
    const double expected_ns = eval_ns * calls_per_batch / eval_calls;
    if (expected_ns > 0)
      keep_least(batch_ns / expected_ns, &found.least_gpu_share);
    if (eval_all_ns > 0)
      keep_least(batch_all_ns / (eval_all_ns * calls_per_batch / eval_calls), &found.least_gpu_share_all);
    if (unlike.empty() && batch_ns < batch_gpu_time_floor * expected_ns) {
      std::snprintf(text, sizeof text, "its kernels took %.3f ms of GPU time, where %d eval-mode calls take %.3f ms",
                    batch_ns / 1e6, calls_per_batch, expected_ns / 1e6);
      unlike = text;
    }
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
