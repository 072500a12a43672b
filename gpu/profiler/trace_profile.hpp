// Pure functions from a CUPTI trace (gpu/cupti) to a ProfileReport and its hacking verdict.
#pragma once

#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// Reads a trace file (one KernelActivity per line, JSON). Lines that do not parse are
// counted in `bad_lines` and skipped. A missing file gives an empty trace.
std::vector<KernelActivity> read_trace(const std::string& path, int* bad_lines);

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
