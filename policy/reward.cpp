#include "policy/reward.hpp"

#include <algorithm>

namespace kgym {

RewardConfig default_reward_config() {
  RewardConfig c;
  c.set_correct_reward(0.5);
  c.set_speedup_weight(0.5);
  c.set_speedup_cap(3.0);
  c.set_coverage_weight(0.5);
  return c;
}

double reward_speedup(const ExecResult& result) {
  const auto& profile = result.profile();
  if (profile.evidence_source() == "cpu_cost_model" && profile.modeled_speedup() > 0)
    return profile.modeled_speedup();
  return result.speedup();
}

RewardBreakdown turn_reward(const ExecResult& result, const RewardConfig& config) {
  RewardBreakdown b;
  b.set_valid(result.verdict() != INTERNAL_ERROR);
  if (result.verdict() != OK || !result.correct()) {
    b.set_reason(Verdict_Name(result.verdict()) + ": no reward");
    return b;
  }
  b.set_correctness(config.correct_reward());
  b.set_speedup(config.speedup_weight() * std::min(std::max(reward_speedup(result), 0.0), config.speedup_cap()));
  b.set_coverage(config.coverage_weight() * std::clamp(result.profile().coverage(), 0.0, 1.0));
  b.set_total(b.correctness() + b.speedup() + b.coverage());
  b.set_reason("correct");
  return b;
}

}  // namespace kgym
