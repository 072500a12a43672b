// The embedded policy's answers: each built-in task's hand-written programs (its
// candidates/ directory: fused, lazy, wrong, cheating, ...) plus one broken answer (a
// program cut off halfway, as an LLM that ran out of tokens leaves it).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// (action name, Python source), sorted by name; throws if the task has no candidates/.
std::vector<std::pair<std::string, std::string>> embedded_programs(const std::string& task_dir);

// A task suite with the embedded policy's programs for each task.
struct embedded_suite {
  std::map<std::string, Task> tasks;  // by id
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> programs;  // id -> (action, source)
  std::map<std::string, std::vector<std::string>> actions;                         // id -> action names
};

// Every task under `tasks_dir` (only those in `only`, when given); throws when a wanted task
// is missing or none is found.
embedded_suite load_embedded_suite(const std::string& tasks_dir, const std::set<std::string>& only = {});

// Tasks from several directories (e.g. KernelBench levels); `with_programs` false: tasks
// need no candidates/ (a policy that writes its own programs).
embedded_suite load_embedded_suite(const std::vector<std::string>& tasks_dirs, const std::set<std::string>& only,
                                   bool with_programs);

}  // namespace kgym
