// How much a long-running command (kgym serve, kgym worker) logs: --log-level, default info.
// At info a service logs what happens to it (start, workers, refusals, a progress line every
// 10 s) and one line per evaluation when answered (where it came from, its verdict, where it
// ran); debug adds a line at each request's arrival.
#pragma once

#include "cli/command_line.hpp"

namespace kgym::cli {

void declare_log_level(command_line& c);

// Sets spdlog's level from --log-level.
void apply_log_level(const args& a);

}  // namespace kgym::cli
