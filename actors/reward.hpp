// reward: an evaluation's reward and its breakdown (policy/reward, pure) under the run's
// RewardConfig.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using reward_actor = caf::typed_actor<caf::replies_to<ExecResult>::with<RewardBreakdown>>;

reward_actor spawn_reward(caf::actor_system& system, RewardConfig config);

}  // namespace kgym
