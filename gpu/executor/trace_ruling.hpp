// The last step of an evaluation: its CUPTI trace, read once the candidate's process has
// exited, is checked and ruled on. The executor hands it to the profiler actor so the device
// moves on to the next evaluation meanwhile; a caller of sandbox_evaluator::evaluate gets it
// done in line. Both go through these two functions.
#pragma once

#include <string>

#include "messages/kgym.pb.h"

namespace kgym {

// The trace file at `path` (read_untrusted_file: a link or a FIFO in its place is no trace),
// with what the ruling needs from the request (its options with defaults applied).
CandidateTrace read_candidate_trace(const std::string& path, const std::string& key_hex, const ExecRequest& request);

// `result` once its trace is ruled on: kernels generated but not named in the source, the
// trace's integrity, the request windows and (GPU) the profile; then every text scrubbed of
// kgym's secrets and the verdict logged. A trace without a key (no trace was made) rules
// nothing.
ExecResult rule_on_trace(ExecResult result, const CandidateTrace& trace);

}  // namespace kgym
