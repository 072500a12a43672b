// Context management: which earlier turns the next prompt carries.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kgym {

// The indices of the `keep` earlier turns with the highest reward (ties: the later turn
// wins), in chronological order, as the next prompt presents them.
std::vector<size_t> select_context(const std::vector<double>& turn_rewards, size_t keep = 4);

// The same choice under a token budget: the best turns by reward, each costing
// `turn_tokens[i]`, taken while they fit in `budget` (a turn that does not fit is skipped,
// a cheaper lower-reward one may still go in); chronological order.
std::vector<size_t> select_context_within(const std::vector<double>& turn_rewards,
                                          const std::vector<size_t>& turn_tokens, size_t keep, size_t budget);

// What kgym counts as a token when no tokenizer is at hand: 4 bytes of text (rounded up).
size_t approx_tokens(const std::string& text);

}  // namespace kgym
