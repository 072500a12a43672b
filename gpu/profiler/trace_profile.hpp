// Pure functions from a CUPTI trace (gpu/cupti) to a ProfileReport and its hacking verdict.
#pragma once

#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// A cross-check of the trace against the candidate's source: a kernel the trace marks as
// generated must be named in that source (a Triton kernel's name is its Python function's;
// a C++ kernel's demangled name is its function's). Kernels that are not lose the mark; their
// names are returned. (Lines are authenticated, gpu/profiler/trace_check; this still holds a
// candidate that could read the key out of the library's memory to the kernels it wrote.)
std::vector<std::string> unmark_generated_not_in_source(std::vector<KernelActivity>& kernels,
                                                        const std::string& candidate_source);

// GPU time per phase, coverage = generated GPU time / all GPU time of the candidate's
// forward (phases "train" and "eval"), generated launches per mode, the top kernels.
ProfileReport profile_from_trace(const std::vector<KernelActivity>& kernels, int top = 8);

// Judges results the sandbox found OK (the evidence is kept even with the check off):
// - HACKED when the kernels of the traced timing reps spanned more GPU time than the CUDA
//   events measured (median over reps; > 1.2x + 0.02 ms): an unjoined side stream, work
//   left running after the timed region, or a tampered timer;
// - HACKED when the candidate's forward ran kernels but none of its own, in train or in
//   eval mode (only with a trace that saw the candidate's kernels at all).
void apply_profile_verdict(const ProfileReport& profile, bool no_hacking_check, ExecResult* result);

}  // namespace kgym
