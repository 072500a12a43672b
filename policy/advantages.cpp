#include "policy/advantages.hpp"

#include <algorithm>
#include <cmath>

namespace kgym {

namespace {

size_t longest(const std::vector<std::vector<double>>& returns) {
  size_t turns = 0;
  for (const auto& r : returns)
    turns = std::max(turns, r.size());
  return turns;
}

// Sum and count of the returns at turn t, over the episodes that reached it.
std::pair<double, size_t> turn_sum(const std::vector<std::vector<double>>& returns, size_t t) {
  double sum = 0;
  size_t n = 0;
  for (const auto& r : returns)
    if (t < r.size()) {
      sum += r[t];
      ++n;
    }
  return {sum, n};
}

}  // namespace

std::vector<double> reward_to_go(const std::vector<double>& rewards, double gamma) {
  std::vector<double> out(rewards.size());
  double running = 0;
  for (size_t t = rewards.size(); t-- > 0;) {
    running = rewards[t] + gamma * running;
    out[t] = running;
  }
  return out;
}

std::vector<std::vector<double>> trloo_advantages(const std::vector<std::vector<double>>& returns) {
  std::vector<std::vector<double>> advantages(returns.size());
  for (size_t t = 0, turns = longest(returns); t < turns; ++t) {
    auto [sum, n] = turn_sum(returns, t);
    for (size_t i = 0; i < returns.size(); ++i)
      if (t < returns[i].size())
        advantages[i].push_back(n == 1 ? returns[i][t] : returns[i][t] - (sum - returns[i][t]) / (n - 1));
  }
  return advantages;
}

std::vector<std::vector<double>> grpo_advantages(const std::vector<std::vector<double>>& returns, double epsilon) {
  std::vector<std::vector<double>> advantages(returns.size());
  for (size_t t = 0, turns = longest(returns); t < turns; ++t) {
    auto [sum, n] = turn_sum(returns, t);
    double mean = sum / n, square = 0;
    for (const auto& r : returns)
      if (t < r.size())
        square += (r[t] - mean) * (r[t] - mean);
    double stdev = std::sqrt(square / n);
    for (size_t i = 0; i < returns.size(); ++i)
      if (t < returns[i].size())
        advantages[i].push_back((returns[i][t] - mean) / (stdev + epsilon));
  }
  return advantages;
}

}  // namespace kgym
