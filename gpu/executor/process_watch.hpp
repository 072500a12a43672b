// What the executor can see of a process session (or a cgroup) from outside: its memory, and a kill.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace kgym {

// Memory held, in bytes, by every process whose session id is `session`: each process's
// proportional set size (a page shared with its forks counts once over them all; its resident
// size where that cannot be read), or with `proportional` false its resident size (cheaper:
// reading a process's proportional size walks its page tables; never less).
int64_t session_memory_bytes(pid_t session, bool proportional);

// The uid a process runs as (its /proc entry's owner); -1 if it is gone.
uid_t process_uid(pid_t pid);

// Memory held by every process running as `uid` (as session_memory_bytes), plus the memfd files they hold open
// (each counted once): what a candidate holds wherever its processes went (setsid, double
// fork), where no cgroup counts it. Only meaningful for a uid of the candidate's alone.
int64_t uid_memory_bytes(uid_t uid, bool proportional);

// The pid namespace a process is in ("pid:[inode]"; pid 0: this process's), empty if it cannot
// be read.
std::string pid_namespace_of(pid_t pid);

// Memory held by every process in `pid_namespace` (pid_namespace_of), plus the memfd files
// they hold: what a candidate holds that is pid 1 of a namespace of its own, where neither a
// cgroup nor a uid of its own counts it (unprivileged). No process leaves a pid namespace.
int64_t pid_namespace_memory_bytes(const std::string& pid_namespace, bool proportional);

// The tasks (processes and threads) of every process in `pid_namespace`: what a candidate runs
// where no pids cgroup bounds its tree (unprivileged), counted as the memory is.
int64_t pid_namespace_tasks(const std::string& pid_namespace);

// The bytes a cgroup's usage file (memory.current, memory.usage_in_bytes) says are in use; 0
// if it cannot be read.
int64_t cgroup_memory_bytes(const std::string& usage_file);

// SIGKILLs the process group `group` (the evaluation process called setsid, so its pid).
void kill_group(pid_t group);

}  // namespace kgym
