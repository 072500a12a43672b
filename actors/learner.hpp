// learner: takes an iteration's episodes (groups of G on each task), computes reward-to-go
// and TRLOO/GRPO advantages, filters with MRS and PRS, updates the embedded policy, records
// the iteration (metrics.jsonl, then a checkpoint), and hands the new version to inference.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>

#include "actors/inference.hpp"
#include "actors/monitor.hpp"
#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"
#include "policy/learner_update.hpp"

namespace kgym {

using learner_actor = caf::typed_actor<caf::replies_to<IterationBatch>::with<IterationMetrics>>;

struct learner_options {
  learner_settings settings;
  double lazy_coverage = 0.3;
  std::string run_dir;  // empty: keep nothing on disk (tests, benchmarks)
  inference_actor inference;
  monitor_actor monitor;
  // The trainer backend only:
  TrainerConfig trainer;       // endpoint empty: evaluation only (no updates)
  std::string system_prompt;   // what the served model was shown, for the trainer's template
  double clip = 0.2;
};

// Spawned detached: it writes the metrics line and the checkpoint before it answers.
learner_actor spawn_learner(caf::actor_system& system, EmbeddedPolicy policy, learner_options options);

// The learner of an LLM policy: the same selection (advantages, MRS, PRS), with the
// trainer's log-probs for MRS asked of an external trainer over ZeroMQ (ScoreRequest), then
// a TrainBatch of the kept turns; the trainer's PolicyVersion goes on to inference.
learner_actor spawn_trainer_learner(caf::actor_system& system, int64_t version, learner_options options);

}  // namespace kgym
