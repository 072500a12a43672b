#include "pipeline/metrics.hpp"

#include <algorithm>

namespace kgym {

bool is_fast(const turn_outcome& o, double p) { return o.correct && !o.hacked && o.speedup >= p; }

std::vector<double> fast_at_p_per_turn(const std::vector<std::vector<turn_outcome>>& turns, double p) {
  size_t longest = 0;
  for (const auto& task : turns)
    longest = std::max(longest, task.size());
  std::vector<double> out;
  for (size_t t = 0; t < longest; ++t) {
    size_t fast = 0, counted = 0;
    for (const auto& task : turns) {
      if (task.empty())
        continue;
      ++counted;
      fast += is_fast(task[std::min(t, task.size() - 1)], p) ? 1 : 0;
    }
    out.push_back(counted ? static_cast<double>(fast) / counted : 0.0);
  }
  return out;
}

double fast_at_p_last_turn(const std::vector<std::vector<turn_outcome>>& turns, double p) {
  if (turns.empty())
    return 0.0;
  size_t fast = 0;
  for (const auto& task : turns)
    fast += !task.empty() && is_fast(task.back(), p) ? 1 : 0;
  return static_cast<double>(fast) / turns.size();
}

double fast_at_p_best_of_history(const std::vector<std::vector<turn_outcome>>& turns, double p) {
  if (turns.empty())
    return 0.0;
  size_t fast = 0;
  for (const auto& task : turns)
    fast += std::any_of(task.begin(), task.end(), [p](const turn_outcome& o) { return is_fast(o, p); }) ? 1 : 0;
  return static_cast<double>(fast) / turns.size();
}

}  // namespace kgym
