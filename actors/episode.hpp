// episode: one multi-turn episode. Each turn: prompt (the task and the top earlier turns by
// reward) -> inference -> compiler -> scheduler (sandboxed execution and profile) -> reward
// -> feedback for the next turn. Answers its EpisodeSpec with the finished Episode and quits.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/compiler.hpp"
#include "actors/inference.hpp"
#include "actors/monitor.hpp"
#include "actors/reward.hpp"
#include "actors/scheduler.hpp"
#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using episode_actor = caf::typed_actor<caf::replies_to<EpisodeSpec>::with<Episode>>;

// What an episode talks to, and how it evaluates (the same for every episode of a run).
struct episode_services {
  inference_actor inference;
  compiler_actor compiler;
  scheduler_actor scheduler;
  reward_actor reward;
  monitor_actor monitor;
  Device device = CPU;
  EvalOptions options;
  int context_turns = 4;
  int context_token_budget = 0;  // approximate tokens for earlier turns in a prompt; 0: no limit
};

episode_actor spawn_episode(caf::actor_system& system, episode_services services, Task task);

}  // namespace kgym
