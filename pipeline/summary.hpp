// Human-readable lines for results.
#pragma once

#include <string>

#include "messages/kgym.pb.h"

namespace kgym {

// "fused  OK  speedup 1.52x (ref 2.104 ms, cand 1.384 ms)  10/10 trials  3.1 s"
std::string summary_line(const ExecResult& result);

}  // namespace kgym
