// The embedded policy: for each task and feedback state, a softmax over the task's
// hand-written programs. Sampling gives the program and its log-probability; the learner
// updates the logits with exact policy gradients (d log pi(a|s) / d logits = onehot(a) - pi).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// The outcome classes a turn's feedback falls into (the schema's FeedbackState but the unset
// value): the states the next turn is sampled in.
std::vector<FeedbackState> feedback_states();

// FAILED (no code, compile/runtime error, timeout, crash), INCORRECT, HACKED, CORRECT_SLOW
// (correct, speedup < fast_threshold), CORRECT_FAST.
FeedbackState feedback_state(const ExecResult& result, double speedup, double fast_threshold = 1.2);

// One table per (task, state), all logits 0 (uniform).
EmbeddedPolicy make_embedded_policy(const std::map<std::string, std::vector<std::string>>& actions_by_task);

const PolicyTable& policy_table(const EmbeddedPolicy& policy, const std::string& task_id, FeedbackState state);
PolicyTable& policy_table(EmbeddedPolicy& policy, const std::string& task_id, FeedbackState state);

std::vector<double> action_probabilities(const PolicyTable& table);

struct sampled_action {
  int index = 0;
  double logprob = 0.0;
};

// Inverse-CDF sampling with a uniform number drawn from `seed` (repeatable).
sampled_action sample_action(const PolicyTable& table, uint64_t seed);

double action_logprob(const PolicyTable& table, int index);

// logits += step * (onehot(index) - probabilities): one sample's exact gradient of
// log pi(index), where `probabilities` is pi at the point the gradient is taken and
// step = learning rate * advantage.
void policy_gradient_step(PolicyTable& table, const std::vector<double>& probabilities, int index, double step);

// A uniform number in [0, 1) from a seed (splitmix64): the repeatable randomness of kgym.
double uniform01(uint64_t seed);
uint64_t mix_seed(uint64_t a, uint64_t b);

}  // namespace kgym

namespace kgym {

// What a built-in program is, by its file name: "cheating" (cheat*, identity), "lazy"
// (lazy, token_kernel), "broken", or "other". Only metrics use it, never the reward.
std::string program_kind(const std::string& action);

}  // namespace kgym
