#include "policy/context.hpp"

#include <algorithm>
#include <numeric>

namespace kgym {

std::vector<size_t> select_context(const std::vector<double>& turn_rewards, size_t keep) {
  std::vector<size_t> order(turn_rewards.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return turn_rewards[a] != turn_rewards[b] ? turn_rewards[a] > turn_rewards[b] : a > b;
  });
  order.resize(std::min(keep, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace kgym
