// What the executor can see of a process session from outside: its memory, and a kill.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace kgym {

// Resident memory, in bytes, of every process whose session id is `session`.
int64_t session_rss_bytes(pid_t session);

// SIGKILLs the process group `group` (the evaluation process called setsid, so its pid).
void kill_group(pid_t group);

}  // namespace kgym
