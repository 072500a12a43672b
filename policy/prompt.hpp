// What the policy reads and what it must answer: the prompt of a turn (the task, the rules,
// and the top earlier turns by reward with their feedback) and the program in an answer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// The contents of the last fenced code block (```python ... ``` or ``` ... ```), if any.
std::optional<std::string> extract_program(const std::string& response);

// Structured feedback of one evaluated turn, as the next prompt shows it.
std::string turn_feedback(const Turn& turn);

// The prompt for the next turn; `earlier` are this episode's finished turns. The top
// `context_turns` by reward go in, within `context_token_budget` approximate tokens (0: no limit).
std::string build_prompt(const Task& task, const std::vector<Turn>& earlier, size_t context_turns = 4,
                         size_t context_token_budget = 0);

}  // namespace kgym
