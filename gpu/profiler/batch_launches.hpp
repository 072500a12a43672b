// A timed batch is k eval-mode calls on k input sets, and the candidate's process holds all k
// from the batch's start (the judge's clock around the whole batch is what lets a call be timed
// without a round trip). So a candidate could work out every set in its first call (one launch
// over all of them, a larger grid) and answer the later calls from that: a time per call no
// caller handing it one input at a time would see. An honest call launches in a batch what it
// launched in a correctness call, so each batch window must hold, of the candidate's own kernels
// (those the trace attributed to its code in the eval-mode calls), k times what one eval-mode
// call launched, kernel by kernel with the same grid and block, and half the GPU time of k calls
// at the least, of its own kernels and of all its process's. One eval-mode call is the median of
// the calls, figure by figure, so a first call's lazy set-up is no call's measure; its GPU time is
// the traced calls' median (TRACE_TIMED: one call a request, alone on a quiet GPU, outputs
// checked) where that is less, for the eval-mode calls run beside the judge's reference.
#pragma once

#include <string>

#include "gpu/profiler/trace_check.hpp"

namespace kgym {

struct batch_launches {
  int batches = 0;          // batch windows compared
  int unlike = 0;           // of them, windows whose own launches are not k eval-mode calls'
  std::string first_unlike; // what the first such window held, against what k calls launch
  // The GPU time of a batch's own kernels over k eval-mode calls', the least over the batches
  // (-1: none compared): what batch_gpu_time_floor is measured against.
  double least_gpu_share = -1;
  // The same over every kernel of the candidate's process, its own or not (PyTorch's, a CUDA
  // graph's), copies and memsets left out: work done ahead through kernels not its own is not in
  // least_gpu_share.
  double least_gpu_share_all = -1;
};

// A batch may launch this share of what k eval-mode calls do, at the least (a candidate whose
// launches vary a little from call to call keeps its verdict; one launch for all k calls does not).
constexpr double batch_launch_floor = 0.75;

// ... and its own kernels may take this share of the GPU time k eval-mode calls' take, at the
// least: a candidate that keeps every call's launches but has its first call's kernel work out all
// k sets on the same grid (blocks idle in a single call) and the later calls' return at once
// shows a batch far shorter on the GPU than its calls alone. Honest batches run the same kernels
// on inputs as cold (the judge flushes L2 before each), so they take about what the calls alone
// take; the floor leaves room for a GPU warmer in the batch than between the trials. The same
// floor holds for all the kernels of its process (a look-ahead through PyTorch's kernels, which
// the trace does not attribute to it: hostile batches_ahead_torch).
constexpr double batch_gpu_time_floor = 0.5;

// `calls_per_batch`: ExecResult's timed_batch_calls. Windows as check_request_windows opens
// them (a batch call to the next phase call); the eval-mode calls are the kernels recorded in
// the TRACE_EVAL phase, each to the eval phase call it started after, the traced calls those in
// TRACE_TIMED, each to its window; a kernel's GPU time is its end less its start. Pure.
batch_launches check_batch_launches(const checked_trace& trace, int calls_per_batch);

// Records least_gpu_share and least_gpu_share_all in the result (ExecResult.batch_gpu_share,
// batch_gpu_share_all); for a result the sandbox
// found OK, a batch unlike its calls -> HACKED "batch_unlike_its_calls" (evidence kept even with
// the check off, and beside another rule's HACKED).
void apply_batch_launches(const batch_launches& found, bool no_hacking_check, ExecResult* result);

}  // namespace kgym
