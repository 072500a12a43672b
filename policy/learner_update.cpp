#include "policy/learner_update.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>
#include <vector>

#include "policy/advantages.hpp"
#include "policy/embedded_policy.hpp"

namespace kgym {

learner_settings learner_settings_from(const TrainConfig& config) {
  learner_settings s;
  s.advantage = config.advantage();
  s.gamma = config.gamma();
  s.learning_rate = config.learning_rate();
  s.mrs = config.mrs();
  s.bounds = {config.mrs_low(), config.mrs_high(), config.mrs_min_token()};
  s.prs = config.prs();
  s.prs_threshold = config.prs_threshold();
  s.prs_width = config.prs_width();
  s.seed = config.seed();
  return s;
}

namespace {

struct gradient_term {
  std::string task_id, state;
  int action;
  double advantage;
};

std::vector<std::vector<double>> group_advantages(const std::vector<const Episode*>& group,
                                                  const learner_settings& s) {
  std::vector<std::vector<double>> returns;
  for (const auto* e : group) {
    std::vector<double> rewards;
    for (const auto& t : e->turns())
      rewards.push_back(t.reward().total());
    returns.push_back(reward_to_go(rewards, s.gamma));
  }
  if (s.advantage == "grpo")
    return grpo_advantages(returns);
  if (s.advantage != "trloo")
    throw std::invalid_argument("advantage must be trloo or grpo, got '" + s.advantage + "'");
  return trloo_advantages(returns);
}

}  // namespace

LearnerStep learner_update(EmbeddedPolicy& policy, const TrainBatch& batch, const learner_settings& s) {
  LearnerStep step;
  step.set_iteration(batch.iteration());
  std::map<std::string, std::vector<const Episode*>> groups;
  for (const auto& e : batch.episodes())
    groups[e.group_id()].push_back(&e);

  std::vector<gradient_term> terms;
  double abs_advantage = 0, staleness = 0;
  for (const auto& [group_id, group] : groups) {
    auto advantages = group_advantages(group, s);
    for (size_t i = 0; i < group.size(); ++i) {
      const Episode& e = *group[i];
      for (int t = 0; t < e.turns_size(); ++t) {
        const Turn& turn = e.turns(t);
        step.set_turns(step.turns() + 1);
        staleness += static_cast<double>(policy.version() - turn.policy_version());
        if (!turn.reward().valid() || turn.token_ids_size() != 1 || turn.rollout_logprobs_size() != 1) {
          step.set_invalid_turns(step.invalid_turns() + 1);  // kgym's failure, or no sampled action
          continue;
        }
        const auto& table = policy_table(policy, e.task_id(), turn.feedback_state());
        int action = turn.token_ids(0);
        double trainer_logp = action_logprob(table, action);
        if (s.mrs && !mismatch_rejection({trainer_logp}, {turn.rollout_logprobs(0)}, s.bounds).keep) {
          step.set_mrs_rejected_turns(step.mrs_rejected_turns() + 1);
          step.set_mrs_rejected_tokens(step.mrs_rejected_tokens() + turn.token_ids_size());
          continue;
        }
        bool correct = turn.result().verdict() == OK;
        double keep = s.prs ? prs_keep_probability(correct, turn.result().profile().coverage(), s.prs_threshold,
                                                   s.prs_width)
                            : 1.0;
        uint64_t draw = mix_seed(s.seed, std::hash<std::string>{}(e.episode_id() + "#" + std::to_string(t)));
        if (keep < 1.0 && uniform01(draw) >= keep) {
          step.set_prs_rejected_turns(step.prs_rejected_turns() + 1);
          step.set_prs_rejected_tokens(step.prs_rejected_tokens() + turn.token_ids_size());
          continue;
        }
        terms.push_back({e.task_id(), turn.feedback_state(), action, advantages[i][t]});
        abs_advantage += std::fabs(advantages[i][t]);
      }
    }
  }
  // Every term's gradient is taken at the policy that existed before this update, and each
  // table moves by the mean of its own terms (its step does not shrink as tasks are added).
  EmbeddedPolicy before = policy;
  std::map<std::pair<std::string, std::string>, int> terms_per_table;
  for (const auto& term : terms)
    ++terms_per_table[{term.task_id, term.state}];
  for (const auto& term : terms) {
    double scale = s.learning_rate / terms_per_table[{term.task_id, term.state}];
    policy_gradient_step(policy_table(policy, term.task_id, term.state),
                         action_probabilities(policy_table(before, term.task_id, term.state)), term.action,
                         scale * term.advantage);
  }
  policy.set_version(policy.version() + 1);
  step.set_version(policy.version());
  step.set_turns_used(static_cast<int>(terms.size()));
  step.set_mean_abs_advantage(terms.empty() ? 0.0 : abs_advantage / terms.size());
  step.set_mean_staleness(step.turns() ? staleness / step.turns() : 0.0);
  return step;
}

}  // namespace kgym
