// One learner update of the embedded policy from an iteration's episodes: reward-to-go,
// TRLOO (or GRPO) advantages per group and turn, MRS and PRS filtering, and the exact
// policy gradient, applied as one batch. Pure apart from the seeded PRS draws.
#pragma once

#include <cstdint>
#include <string>

#include "messages/kgym.pb.h"
#include "policy/filters.hpp"

namespace kgym {

struct learner_settings {
  std::string advantage = "trloo";  // trloo | grpo
  double gamma = 1.0;
  double learning_rate = 1.0;
  bool mrs = true;
  mrs_bounds bounds;
  bool prs = true;
  double prs_threshold = 0.3;
  double prs_width = 0.1;
  uint64_t seed = 0;
};

learner_settings learner_settings_from(const TrainConfig& config);

// Updates `policy` in place (version + 1) and says what the filters removed. Each
// (task, state) table takes a step of learning_rate times the mean over its kept turns of
// advantage * d log pi(action) / d logits.
LearnerStep learner_update(EmbeddedPolicy& policy, const TrainBatch& batch, const learner_settings& settings);

}  // namespace kgym
