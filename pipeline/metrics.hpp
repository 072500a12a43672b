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

// Sets fast1_last, fast1_2_last, fast1_best and fast1_2_best of a message that has them
// (IterationMetrics, EvalReport).
template <class Message>
void set_fast_summary(Message& m, const std::vector<std::vector<turn_outcome>>& turns) {
  m.set_fast1_last(fast_at_p_last_turn(turns, 1.0));
  m.set_fast1_2_last(fast_at_p_last_turn(turns, 1.2));
  m.set_fast1_best(fast_at_p_best_of_history(turns, 1.0));
  m.set_fast1_2_best(fast_at_p_best_of_history(turns, 1.2));
}

}  // namespace kgym
