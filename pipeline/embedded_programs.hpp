// The embedded policy's answers: each built-in task's hand-written programs (its
// candidates/ directory: fused, lazy, wrong, cheating, ...) plus one broken answer (a
// program cut off halfway, as an LLM that ran out of tokens leaves it).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kgym {

// (action name, Python source), sorted by name; throws if the task has no candidates/.
std::vector<std::pair<std::string, std::string>> embedded_programs(const std::string& task_dir);

}  // namespace kgym
