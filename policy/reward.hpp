// The reward of one turn, from its evaluation.
#pragma once

#include "messages/kgym.pb.h"

namespace kgym {

RewardConfig default_reward_config();

// The speedup that rewards and Fast@p use: the measured one, except in CPU mode where
// Triton's interpreter makes time meaningless and the sandbox's modeled GPU speedup stands in.
double reward_speedup(const ExecResult& result);

// Failure of any kind (compile, runtime, timeout, crash, incorrect, hacked) -> 0.
// Correct -> correct_reward + speedup_weight * min(speedup, speedup_cap)
//            + coverage_weight * coverage (PR).
RewardBreakdown turn_reward(const ExecResult& result, const RewardConfig& config);

}  // namespace kgym
