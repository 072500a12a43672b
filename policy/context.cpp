#include "policy/context.hpp"

#include <algorithm>
#include <numeric>

namespace kgym {

namespace {
// Indices by reward, best first (ties: the later turn first).
std::vector<size_t> by_reward(const std::vector<double>& turn_rewards) {
  std::vector<size_t> order(turn_rewards.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return turn_rewards[a] != turn_rewards[b] ? turn_rewards[a] > turn_rewards[b] : a > b;
  });
  return order;
}
}  // namespace

std::vector<size_t> select_context(const std::vector<double>& turn_rewards, size_t keep) {
  auto order = by_reward(turn_rewards);
  order.resize(std::min(keep, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<size_t> select_context_within(const std::vector<double>& turn_rewards,
                                          const std::vector<size_t>& turn_tokens, size_t keep, size_t budget) {
  std::vector<size_t> chosen;
  size_t used = 0;
  for (size_t i : by_reward(turn_rewards)) {
    if (chosen.size() == keep)
      break;
    if (used + turn_tokens[i] > budget)
      continue;
    used += turn_tokens[i];
    chosen.push_back(i);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

size_t approx_tokens(const std::string& text) { return (text.size() + 3) / 4; }

}  // namespace kgym
