#include "policy/embedded_policy.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kgym {

std::vector<FeedbackState> feedback_states() {
  std::vector<FeedbackState> states;
  for (int i = FeedbackState_MIN; i <= FeedbackState_MAX; ++i)
    if (FeedbackState_IsValid(i) && i != FEEDBACK_STATE_UNSPECIFIED)
      states.push_back(static_cast<FeedbackState>(i));
  return states;
}

FeedbackState feedback_state(const ExecResult& result, double speedup, double fast_threshold) {
  switch (result.verdict()) {
    case OK:
      return speedup >= fast_threshold ? FEEDBACK_CORRECT_FAST : FEEDBACK_CORRECT_SLOW;
    case INCORRECT:
      return FEEDBACK_INCORRECT;
    case HACKED:
      return FEEDBACK_HACKED;
    default:
      return FEEDBACK_FAILED;
  }
}

EmbeddedPolicy make_embedded_policy(const std::map<std::string, std::vector<std::string>>& actions_by_task) {
  EmbeddedPolicy policy;
  for (const auto& [task, actions] : actions_by_task)
    for (const auto state : feedback_states()) {
      auto* table = policy.add_tables();
      table->set_task_id(task);
      table->set_state(state);
      for (const auto& a : actions) {
        table->add_actions(a);
        table->add_logits(0.0);
      }
    }
  return policy;
}

namespace {
int table_index(const EmbeddedPolicy& policy, const std::string& task_id, FeedbackState state) {
  for (int i = 0; i < policy.tables_size(); ++i)
    if (policy.tables(i).task_id() == task_id && policy.tables(i).state() == state)
      return i;
  throw std::out_of_range("the embedded policy has no table for task '" + task_id + "' in state " +
                          FeedbackState_Name(state));
}
}  // namespace

const PolicyTable& policy_table(const EmbeddedPolicy& policy, const std::string& task_id, FeedbackState state) {
  return policy.tables(table_index(policy, task_id, state));
}

PolicyTable& policy_table(EmbeddedPolicy& policy, const std::string& task_id, FeedbackState state) {
  return *policy.mutable_tables(table_index(policy, task_id, state));
}

std::vector<double> action_probabilities(const PolicyTable& table) {
  std::vector<double> p(table.logits().begin(), table.logits().end());
  if (p.empty())
    return p;
  double top = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (auto& x : p)
    sum += (x = std::exp(x - top));
  for (auto& x : p)
    x /= sum;
  return p;
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9e3779b97f4a7c15ULL * (b + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double uniform01(uint64_t seed) { return static_cast<double>(mix_seed(seed, 0) >> 11) * 0x1.0p-53; }

sampled_action sample_action(const PolicyTable& table, uint64_t seed) {
  auto p = action_probabilities(table);
  if (p.empty())
    throw std::invalid_argument("policy table for task '" + table.task_id() + "' has no actions");
  double u = uniform01(seed), cumulative = 0;
  int chosen = static_cast<int>(p.size()) - 1;
  for (size_t i = 0; i < p.size(); ++i) {
    cumulative += p[i];
    if (u < cumulative) {
      chosen = static_cast<int>(i);
      break;
    }
  }
  return {chosen, std::log(p[chosen])};
}

double action_logprob(const PolicyTable& table, int index) {
  auto p = action_probabilities(table);
  return std::log(p.at(index));
}

void policy_gradient_step(PolicyTable& table, const std::vector<double>& probabilities, int index, double step) {
  for (size_t i = 0; i < probabilities.size(); ++i) {
    double grad = (static_cast<int>(i) == index ? 1.0 : 0.0) - probabilities[i];
    table.set_logits(static_cast<int>(i), table.logits(static_cast<int>(i)) + step * grad);
  }
}

}  // namespace kgym

namespace kgym {

std::string program_kind(const std::string& action) {
  if (action.rfind("cheat", 0) == 0 || action == "identity")
    return "cheating";
  if (action == "lazy" || action == "token_kernel")
    return "lazy";
  if (action == "broken")
    return "broken";
  return "other";
}

}  // namespace kgym
