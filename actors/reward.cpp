#include "actors/reward.hpp"

#include <caf/all.hpp>

#include "policy/reward.hpp"

namespace kgym {

namespace {

reward_actor::behavior_type reward_impl(reward_actor::pointer, RewardConfig config) {
  return {
      [config](const ExecResult& result) -> RewardBreakdown { return turn_reward(result, config); },
  };
}

}  // namespace

reward_actor spawn_reward(caf::actor_system& system, RewardConfig config) {
  return system.spawn(reward_impl, std::move(config));
}

}  // namespace kgym
