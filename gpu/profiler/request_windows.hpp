// The timed batches as the candidate's own trace saw them: each batch request opens a window
// (phase "batch") that closes when its answer is ready (phase "idle"). Between its windows the
// judge times the reference, checks outputs and refills inputs, so nothing of the candidate's
// may run on the GPU then: no background work slowing the reference, no work deferred past an
// answer. And no window may be longer than the judge's own clock around that request, or the
// phase calls were moved to cover such work. On the GPU each batch is followed by its delivery
// (phase "deliver", then "idle" again): its outputs copied into the judge's buffers off the
// judge's clock, in a window where device-to-device copies alone may run, at most as many and
// as large as its outputs (a copy from host memory would bring in a result computed on the CPU
// meanwhile, where no trace sees it), and that is no longer than the judge's clock around the
// delivery request.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/profiler/trace_check.hpp"

namespace kgym {

struct request_windows {
  int windows = 0;            // batch windows
  int deliveries = 0;         // delivery windows
  int outside = 0;            // kernels, copies and memsets of the timing section outside every window
  double outside_ms = 0;      // their GPU time
  std::string first_outside;  // the first of them, where it ran
  int longer = 0;             // windows (batch or delivery) longer than the judge's request around them
  std::string first_longer;
  int unasked_deliveries = 0;  // delivery windows beyond the judge's delivery requests: phase calls of its own
};

// Clock granularity and skew between CUPTI's kernel timestamps and its clock for the phase
// calls; a kernel or window may pass its bound by this much.
constexpr double window_slack_ms = 0.05;

// What one delivery may do (ExecResult's delivery_ms, delivery_copies, delivery_bytes).
struct delivery_limits {
  std::vector<double> judge_ms;  // the judge's clock around each delivery request, in order
  int copies = 0;                // device-to-device copies, at most
  int64_t bytes = 0;             // that move this many bytes together, at most
};

// `judge_batch_ms`: the judge's clock around each batch request, in order (ExecResult's
// timed_batch_ms); `deliveries`: the same, and what they may copy, for the deliveries. The
// timing section runs from the first window's opening to the first phase call after the last
// window (the traced reps, or the end). Pure.
request_windows check_request_windows(const checked_trace& trace, const std::vector<double>& judge_batch_ms,
                                      const delivery_limits& deliveries = {});

// For a result the sandbox found OK: work outside the windows -> HACKED
// "gpu_work_between_requests"; a window longer than its request -> HACKED
// "batch_window_longer_than_request"; more deliveries than the judge asked for -> HACKED
// "phase_sequence" (evidence kept even with the check off).
void apply_request_windows(const request_windows& found, bool no_hacking_check, ExecResult* result);

}  // namespace kgym
