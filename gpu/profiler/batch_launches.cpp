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
  std::map<std::string, double> own;  // launches by key (one call's: the median over the calls)
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One eval-mode call as the median of the calls, figure by figure (launches of each key, GPU
// time): work one call alone does (a first call's lazy set-up) does not make every call's.
launches median_call(const std::vector<launches>& calls) {
  launches one;
  std::vector<double> own_ns, all_ns;
  for (const auto& call : calls) {
    one.own_names.insert(call.own_names.begin(), call.own_names.end());
    for (const auto& [key, n] : call.own)
      one.own[key] = 0;
    own_ns.push_back(call.own_ns);
    all_ns.push_back(call.all_ns);
  }
  for (auto& [key, n] : one.own) {
    std::vector<double> counts;
    for (const auto& call : calls) {
      const auto it = call.own.find(key);
      counts.push_back(it == call.own.end() ? 0.0 : it->second);
    }
    n = median(counts);
  }
  one.own_ns = median(own_ns);
  one.all_ns = median(all_ns);
  return one;
}

// One call's GPU time (`one`: the eval-mode calls' median) as the traced calls' median where it
// is less: the eval-mode calls may run beside the judge's reference (or another evaluation), which
// stretches their kernels; the traced calls run alone on a quiet GPU, their outputs checked as
// the eval-mode calls' are. A figure the traced calls have none of (0) leaves the eval-mode one.
void take_least_time(const launches& alone, launches* one) {
  if (alone.own_ns > 0 && alone.own_ns < one->own_ns)
    one->own_ns = alone.own_ns;
  if (alone.all_ns > 0 && alone.all_ns < one->all_ns)
    one->all_ns = alone.all_ns;
}

// How a batch of k calls differs from k calls (`one`: one call's, median_call and
// take_least_time), or "" where it does not.
std::string unlike_calls(const launches& batch, const launches& one, int k) {
  char text[400];
  for (const auto& [key, n] : batch.own)
    if (!one.own.count(key)) {
      std::snprintf(text, sizeof text, "%d launches of %s, a shape no eval-mode call launched", static_cast<int>(n),
                    key.c_str());
      return text;
    }
  for (const auto& [key, per_call] : one.own) {
    const double expected = per_call * k;
    const auto it = batch.own.find(key);
    const int n = it == batch.own.end() ? 0 : static_cast<int>(it->second);
    if (n < batch_launch_floor * expected) {
      std::snprintf(text, sizeof text, "%d launches of %s, where %d eval-mode calls launch %.4g", n, key.c_str(), k,
                    expected);
      return text;
    }
  }
  if (batch.own_ns < batch_gpu_time_floor * one.own_ns * k) {
    std::snprintf(text, sizeof text, "its kernels took %.3f ms of GPU time, where %d calls take %.3f ms alone",
                  batch.own_ns / 1e6, k, one.own_ns * k / 1e6);
    return text;
  }
  if (batch.all_ns < batch_gpu_time_floor * one.all_ns * k) {
    std::snprintf(text, sizeof text,
                  "its process's kernels (its own and PyTorch's) took %.3f ms of GPU time, where %d calls take "
                  "%.3f ms alone",
                  batch.all_ns / 1e6, k, one.all_ns * k / 1e6);
    return text;
  }
  return "";
}

// Kernels each to the window it started in (windows: (start, end) in order; a kernel before the
// first or past its window's end is in none).
template <typename Add>
void to_windows(const std::vector<KernelActivity>& kernels, const std::vector<std::pair<uint64_t, uint64_t>>& windows,
                Add add) {
  for (const auto& k : kernels) {
    auto after = std::upper_bound(windows.begin(), windows.end(), k.start_ns(),
                                  [](uint64_t t, const std::pair<uint64_t, uint64_t>& w) { return t < w.first; });
    if (after != windows.begin() && k.start_ns() < (after - 1)->second)
      add(static_cast<size_t>(after - 1 - windows.begin()), k);
  }
}

}  // namespace

batch_launches check_batch_launches(const checked_trace& trace, int calls_per_batch) {
  batch_launches found;
  // The eval-mode calls' windows (each TRACE_EVAL phase call to the next one, so work a call left
  // running counts as its own), the batch windows (a batch call to the next phase call) and the
  // traced calls' (a TRACE_TIMED call to the next phase call).
  std::vector<std::pair<uint64_t, uint64_t>> eval_windows, batch_windows, alone_windows;
  const auto& calls = trace.phase_calls;
  const size_t n = std::min(calls.size(), trace.phase_at_ns.size());
  for (size_t i = 0; i < n; ++i) {
    const uint64_t next = i + 1 < n ? trace.phase_at_ns[i + 1] : UINT64_MAX;
    if (calls[i].kind() == TRACE_EVAL) {
      if (!eval_windows.empty())
        eval_windows.back().second = trace.phase_at_ns[i];
      eval_windows.emplace_back(trace.phase_at_ns[i], UINT64_MAX);
    } else if (calls[i].kind() == TRACE_BATCH) {
      batch_windows.emplace_back(trace.phase_at_ns[i], next);
    } else if (calls[i].kind() == TRACE_TIMED) {
      alone_windows.emplace_back(trace.phase_at_ns[i], next);
    }
  }
  std::vector<launches> eval_calls(eval_windows.size());
  std::vector<KernelActivity> eval_kernels, alone_kernels;
  for (const auto& k : trace.kernels)
    if (k.phase().kind() == TRACE_EVAL)
      eval_kernels.push_back(k);
    else if (k.phase().kind() == TRACE_TIMED)
      alone_kernels.push_back(k);
  to_windows(eval_kernels, eval_windows, [&](size_t i, const KernelActivity& k) { eval_calls[i].add(k, k.generated()); });
  launches one = median_call(eval_calls);
  if (one.own_names.empty() || calls_per_batch < 1)
    return found;
  // A batch's and a traced call's launches are not attributed, so the candidate's are those
  // named like its eval-mode calls' own.
  const auto add_own = [&](std::vector<launches>& to) {
    return [&](size_t i, const KernelActivity& k) { to[i].add(k, one.own_names.count(k.name()) > 0); };
  };
  std::vector<launches> alone(alone_windows.size());
  to_windows(alone_kernels, alone_windows, add_own(alone));
  take_least_time(median_call(alone), &one);
  std::vector<launches> batches(batch_windows.size());
  to_windows(trace.kernels, batch_windows, add_own(batches));
  for (const auto& batch : batches) {
    if (one.own_ns > 0)
      keep_least(batch.own_ns / (one.own_ns * calls_per_batch), &found.least_gpu_share);
    if (one.all_ns > 0)
      keep_least(batch.all_ns / (one.all_ns * calls_per_batch), &found.least_gpu_share_all);
    const std::string unlike = unlike_calls(batch, one, calls_per_batch);
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
  // Kept beside another rule's HACKED too (the judge's clock can end an evaluation first): every
  // rule a cheat broke is in its evidence.
  if ((result->verdict() != OK && result->verdict() != HACKED) || found.unlike == 0)
    return;
  add_evidence(result, BATCH_UNLIKE_ITS_CALLS,
               std::to_string(found.unlike) + " of " + std::to_string(found.batches) +
                   " timed batches ran its kernels other than its calls did alone; " + found.first_unlike,
               "cupti");
  if (!no_hacking_check && result->verdict() == OK)
    mark_hacked(result, PHASE_TIMING,
                "the candidate's timed batches ran its kernels other than its calls do one at a time (work for "
                "several calls at once: it read the batch's later inputs ahead of their calls)");
}

}  // namespace kgym
