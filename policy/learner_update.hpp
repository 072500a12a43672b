// One learner update of the embedded policy from an iteration's episodes: reward-to-go,
// TRLOO (or GRPO) advantages per group and turn, MRS and PRS filtering, and the exact
// policy gradient, applied as one batch. Pure apart from the seeded PRS draws.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"
#include "policy/filters.hpp"

namespace kgym {

struct learner_settings {
  Advantage advantage = TRLOO;
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

// A turn that goes into the update, with its advantage.
struct training_turn {
  int episode;  // index in the batch
  int turn;
  double advantage;
};

struct turn_selection {
  LearnerStep step;  // turns seen, rejected by MRS/PRS, invalid; mean |advantage| and staleness
  std::vector<training_turn> kept;
};

// The trainer's log-probs of a turn's sampled tokens; nullopt when it cannot score them.
using trainer_logprobs_fn = std::function<std::optional<std::vector<double>>(const Episode&, int turn)>;

// Reward-to-go and TRLOO/GRPO advantages per group, then the filters: kgym's own failures
// and turns without tokens are invalid, MRS compares the trainer's log-probs with the
// rollout's, PRS drops lazy correct turns (seeded draws). Shared by every learner backend.
turn_selection select_training_turns(const IterationBatch& batch, int64_t learner_version,
                                     const learner_settings& settings, const trainer_logprobs_fn& trainer_logprobs);

// Updates `policy` in place (version + 1) and says what the filters removed. Each
// (task, state) table takes a step of learning_rate times the mean over its kept turns of
// advantage * d log pi(action) / d logits.
LearnerStep learner_update(EmbeddedPolicy& policy, const IterationBatch& batch, const learner_settings& settings);

}  // namespace kgym
