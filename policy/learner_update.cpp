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

std::vector<std::vector<double>> group_advantages(const std::vector<const Episode*>& group,
                                                  const learner_settings& s) {
  std::vector<std::vector<double>> returns;
  for (const auto* e : group) {
    std::vector<double> rewards;
    for (const auto& t : e->turns())
      rewards.push_back(t.reward().total());
    returns.push_back(reward_to_go(rewards, s.gamma));
  }
  if (s.advantage == GRPO)
    return grpo_advantages(returns);
  if (s.advantage != TRLOO)
    throw std::invalid_argument("advantage must be trloo or grpo, got " + Advantage_Name(s.advantage));
  return trloo_advantages(returns);
}

}  // namespace

turn_selection select_training_turns(const IterationBatch& batch, int64_t learner_version, const learner_settings& s,
                                     const trainer_logprobs_fn& trainer_logprobs) {
  turn_selection out;
  LearnerStep& step = out.step;
  step.set_iteration(batch.iteration());
  std::map<std::string, std::vector<int>> groups;
  for (int i = 0; i < batch.episodes_size(); ++i)
    groups[batch.episodes(i).group_id()].push_back(i);

  double abs_advantage = 0, staleness = 0, abs_log_ratio = 0;
  long scored_tokens = 0;
  for (const auto& [group_id, members] : groups) {
    std::vector<const Episode*> group;
    for (int i : members)
      group.push_back(&batch.episodes(i));
    auto advantages = group_advantages(group, s);
    for (size_t i = 0; i < group.size(); ++i) {
      const Episode& e = *group[i];
      for (int t = 0; t < e.turns_size(); ++t) {
        const Turn& turn = e.turns(t);
        step.set_turns(step.turns() + 1);
        staleness += static_cast<double>(learner_version - turn.policy_version());
        std::optional<std::vector<double>> trainer_logp;
        if (turn.reward().valid() && turn.token_ids_size() > 0 && turn.token_ids_size() == turn.rollout_logprobs_size())
          trainer_logp = trainer_logprobs(e, t);
        if (!trainer_logp || trainer_logp->size() != static_cast<size_t>(turn.token_ids_size())) {
          step.set_invalid_turns(step.invalid_turns() + 1);  // kgym's failure, or nothing the trainer can score
          continue;
        }
        std::vector<double> rollout(turn.rollout_logprobs().begin(), turn.rollout_logprobs().end());
        for (size_t k = 0; k < rollout.size(); ++k)
          abs_log_ratio += std::fabs((*trainer_logp)[k] - rollout[k]);
        scored_tokens += static_cast<long>(rollout.size());
        if (s.mrs && !mismatch_rejection(*trainer_logp, rollout, s.bounds).keep) {
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
        out.kept.push_back({members[i], t, advantages[i][t]});
        abs_advantage += std::fabs(advantages[i][t]);
      }
    }
  }
  step.set_turns_used(static_cast<int>(out.kept.size()));
  step.set_mean_abs_advantage(out.kept.empty() ? 0.0 : abs_advantage / out.kept.size());
  step.set_mean_staleness(step.turns() ? staleness / step.turns() : 0.0);
  step.set_mean_abs_log_ratio(scored_tokens ? abs_log_ratio / scored_tokens : 0.0);
  return out;
}

LearnerStep learner_update(EmbeddedPolicy& policy, const IterationBatch& batch, const learner_settings& s) {
  // The embedded policy's answer is one token (its choice); its log-prob comes from the table.
  auto table_logprob = [&](const Episode& e, int t) -> std::optional<std::vector<double>> {
    const Turn& turn = e.turns(t);
    if (turn.token_ids_size() != 1)
      return std::nullopt;
    return std::vector<double>{action_logprob(policy_table(policy, e.task_id(), turn.feedback()), turn.token_ids(0))};
  };
  turn_selection selection = select_training_turns(batch, policy.version(), s, table_logprob);
  // Every term's gradient is taken at the policy that existed before this update, and each
  // table moves by the mean of its own terms (its step does not shrink as tasks are added).
  EmbeddedPolicy before = policy;
  auto table_key = [&](const training_turn& k) {
    const Episode& e = batch.episodes(k.episode);
    return std::make_pair(e.task_id(), e.turns(k.turn).feedback());
  };
  std::map<std::pair<std::string, FeedbackState>, int> terms_per_table;
  for (const auto& k : selection.kept)
    ++terms_per_table[table_key(k)];
  for (const auto& k : selection.kept) {
    auto [task_id, state] = table_key(k);
    double scale = s.learning_rate / terms_per_table[{task_id, state}];
    int action = batch.episodes(k.episode).turns(k.turn).token_ids(0);
    policy_gradient_step(policy_table(policy, task_id, state), action_probabilities(policy_table(before, task_id, state)),
                         action, scale * k.advantage);
  }
  policy.set_version(policy.version() + 1);
  selection.step.set_version(policy.version());
  return selection.step;
}

}  // namespace kgym
