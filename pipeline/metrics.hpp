// Fast@p: the share of tasks whose answer is correct, not hacked, and at least p times
// faster than the reference. Per turn, last turn, and best of history.
#pragma once

#include <vector>

namespace kgym {

struct turn_outcome {
  bool correct = false;
  bool hacked = false;
  double speedup = 0.0;
};

bool is_fast(const turn_outcome& o, double p);

// turns[task][t]. A task whose episode ended before turn t stands by its last answer.
std::vector<double> fast_at_p_per_turn(const std::vector<std::vector<turn_outcome>>& turns, double p);
double fast_at_p_last_turn(const std::vector<std::vector<turn_outcome>>& turns, double p);
double fast_at_p_best_of_history(const std::vector<std::vector<turn_outcome>>& turns, double p);

}  // namespace kgym
