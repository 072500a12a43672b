// Reads tasks (KernelBench format) and candidates from disk.
#pragma once

#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// `path` is a KernelBench task file, or a directory holding task.py. A task.json next to
// task.py (the JSON mapping of Task: level, description, cpu_sizes) adds metadata.
// Throws std::runtime_error with a message that says what to fix.
Task load_task(const std::string& path);

// Every task under `dir`: subdirectories with task.py, and *.py files (a KernelBench level).
std::vector<std::string> find_tasks(const std::string& dir);

Candidate load_candidate(const std::string& path);

// The candidates shipped with a built-in task (its candidates/ directory), sorted.
std::vector<std::string> find_candidates(const std::string& task_dir);

}  // namespace kgym
