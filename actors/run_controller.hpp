// run_controller: the control plane of a training run. It owns the plan (iterations x tasks
// x group members), starts episodes while staying within the concurrency bound and the
// policy lag (rollouts run at most max_policy_lag versions ahead of the learner), appends
// each finished episode to the store the moment it ends, and feeds whole iterations to the
// learner in order. Answers `run` once the last iteration is trained.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <map>
#include <string>

#include "actors/episode.hpp"
#include "actors/learner.hpp"
#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using run_atom = caf::atom_constant<caf::atom("run")>;

using run_controller_actor = caf::typed_actor<caf::replies_to<run_atom>::with<IterationMetrics>>;

struct run_plan {
  TrainConfig config;
  std::map<std::string, Task> tasks;        // by id: the tasks of the run
  int64_t first_iteration = 0;              // the policy version the run starts from
  std::map<std::string, Episode> finished;  // episodes already in the store (a resumed run)
  std::string store_path;                   // empty: keep no store (benchmarks)
  bool quiet = false;                       // no progress lines
};

// The episode id of member `index` of the group of `task_id` in `iteration`.
std::string episode_id(int64_t iteration, const std::string& task_id, int index);

// Spawned detached: it appends to the episode store as episodes end.
run_controller_actor spawn_run_controller(caf::actor_system& system, run_plan plan, episode_services services,
                                          learner_actor learner);

}  // namespace kgym
