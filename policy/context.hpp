// Context management: which earlier turns the next prompt carries.
#pragma once

#include <cstddef>
#include <vector>

namespace kgym {

// The indices of the `keep` earlier turns with the highest reward (ties: the later turn
// wins), in chronological order, as the next prompt presents them.
std::vector<size_t> select_context(const std::vector<double>& turn_rewards, size_t keep = 4);

}  // namespace kgym
