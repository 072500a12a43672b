// Exact-value tests of the learning math: reward, reward-to-go, TRLOO, GRPO, MRS, PRS,
// context selection, Fast@p.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/metrics.hpp"
#include "policy/advantages.hpp"
#include "policy/context.hpp"
#include "policy/filters.hpp"
#include "policy/reward.hpp"

namespace kgym {
namespace {

ExecResult evaluated(Verdict verdict, double speedup, double coverage) {
  ExecResult r;
  r.set_verdict(verdict);
  r.set_correct(verdict == OK);
  r.set_speedup(speedup);
  r.mutable_profile()->set_coverage(coverage);
  return r;
}

TEST(Reward, CorrectTurnsEarnCorrectnessSpeedupAndCoverage) {
  auto c = default_reward_config();
  RewardBreakdown b = turn_reward(evaluated(OK, 1.5, 0.8), c);
  EXPECT_DOUBLE_EQ(b.correctness(), 0.5);
  EXPECT_DOUBLE_EQ(b.speedup(), 0.75);
  EXPECT_DOUBLE_EQ(b.coverage(), 0.4);
  EXPECT_DOUBLE_EQ(b.total(), 1.65);
  EXPECT_DOUBLE_EQ(turn_reward(evaluated(OK, 10.0, 1.0), c).total(), 0.5 + 1.5 + 0.5);  // speedup capped at 3
}

TEST(Reward, EveryFailureScoresZero) {
  for (Verdict v : {COMPILE_ERROR, RUNTIME_ERROR, INCORRECT, TIMEOUT, CRASHED, CUDA_ERROR, RESOURCE_LIMIT, HACKED}) {
    RewardBreakdown b = turn_reward(evaluated(v, 5.0, 1.0), default_reward_config());
    EXPECT_EQ(b.total(), 0.0) << Verdict_Name(v);
    EXPECT_TRUE(b.valid());
  }
  EXPECT_FALSE(turn_reward(evaluated(INTERNAL_ERROR, 0, 0), default_reward_config()).valid());
}

TEST(Reward, PrOffIgnoresCoverage) {
  auto c = default_reward_config();
  c.set_coverage_weight(0.0);
  EXPECT_DOUBLE_EQ(turn_reward(evaluated(OK, 1.0, 0.9), c).total(), 1.0);
}

TEST(RewardToGo, SumsTheFutureWithDiscount) {
  EXPECT_EQ(reward_to_go({1, 2, 3}), (std::vector<double>{6, 5, 3}));
  EXPECT_EQ(reward_to_go({1, 2, 4}, 0.5), (std::vector<double>{1 + 0.5 * 2 + 0.25 * 4, 2 + 0.5 * 4, 4}));
  EXPECT_TRUE(reward_to_go({}).empty());
}

TEST(Trloo, LeavesTheSampleOutOfItsBaseline) {
  auto a = trloo_advantages({{3, 1}, {1, 2}, {2, 3}});
  // turn 0: 3 - (1+2)/2 = 1.5; 1 - (3+2)/2 = -1.5; 2 - (3+1)/2 = 0
  EXPECT_EQ(a[0][0], 1.5);
  EXPECT_EQ(a[1][0], -1.5);
  EXPECT_EQ(a[2][0], 0.0);
  // turn 1: 1 - 2.5 = -1.5; 2 - 2 = 0; 3 - 1.5 = 1.5
  EXPECT_EQ(a[0][1], -1.5);
  EXPECT_EQ(a[1][1], 0.0);
  EXPECT_EQ(a[2][1], 1.5);
}

TEST(Trloo, EpisodesEndingAtDifferentTurns) {
  auto a = trloo_advantages({{4, 2, 6}, {2}, {0, 4}});
  ASSERT_EQ(a[0].size(), 3u);
  ASSERT_EQ(a[1].size(), 1u);
  ASSERT_EQ(a[2].size(), 2u);
  EXPECT_EQ(a[0][0], 4 - (2 + 0) / 2.0);
  EXPECT_EQ(a[1][0], 2 - (4 + 0) / 2.0);
  EXPECT_EQ(a[0][1], 2 - 4);  // only episodes 0 and 2 reached turn 1
  EXPECT_EQ(a[2][1], 4 - 2);
  EXPECT_EQ(a[0][2], 6);      // alone at turn 2: A = R
  // Equivalent form: n/(n-1) * (R - mean over all n).
  auto b = trloo_advantages({{5}, {1}, {3}, {7}});
  EXPECT_DOUBLE_EQ(b[0][0], 4.0 / 3.0 * (5 - 4));
}

TEST(Grpo, NormalisesByTheGroupIncludingSelf) {
  auto a = grpo_advantages({{1}, {3}}, 0.0);
  EXPECT_DOUBLE_EQ(a[0][0], -1.0);  // mean 2, population std 1
  EXPECT_DOUBLE_EQ(a[1][0], 1.0);
  auto same = grpo_advantages({{2}, {2}});
  EXPECT_EQ(same[0][0], 0.0);
}

TEST(Mrs, KeepsMatchedSequencesAndRejectsMismatch) {
  auto keep = mismatch_rejection({-1.0, -2.0}, {-1.0, -2.0});
  EXPECT_TRUE(keep.keep);
  EXPECT_DOUBLE_EQ(keep.geometric_mean_ratio, 1.0);
  auto drift = mismatch_rejection({-1.0, -2.0}, {-1.01, -2.01});  // ratio e^0.01 per token
  EXPECT_FALSE(drift.keep);
  EXPECT_DOUBLE_EQ(drift.geometric_mean_ratio, std::exp(0.01));
  // One collapsed token (ratio e^-10 < 1e-4) rejects the sequence even if others make up.
  std::vector<double> trainer(1000, -1.0), rollout(1000, -1.0);
  trainer[0] = -11.0;
  trainer[1] = 9.0;
  auto collapsed = mismatch_rejection(trainer, rollout);
  EXPECT_DOUBLE_EQ(collapsed.geometric_mean_ratio, 1.0);
  EXPECT_FALSE(collapsed.keep);
  EXPECT_THROW(mismatch_rejection({-1.0}, {}), std::invalid_argument);
}

TEST(Prs, KeepProbabilityRampsWithCoverage) {
  EXPECT_EQ(prs_keep_probability(true, 0.25), 0.0);
  EXPECT_DOUBLE_EQ(prs_keep_probability(true, 0.35), 0.5);
  EXPECT_EQ(prs_keep_probability(true, 0.9), 1.0);
  EXPECT_EQ(prs_keep_probability(false, 0.0), 1.0);  // incorrect turns are always kept
}

TEST(Context, TopFourByRewardInTurnOrder) {
  EXPECT_EQ(select_context({0.1, 0.9, 0.5, 0.0, 0.7, 0.3}), (std::vector<size_t>{1, 2, 4, 5}));
  EXPECT_EQ(select_context({1.0, 1.0, 1.0, 1.0, 1.0}), (std::vector<size_t>{1, 2, 3, 4}));  // ties: later wins
  EXPECT_EQ(select_context({0.2, 0.1}), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(select_context({}).empty());
}

TEST(FastAtP, PerTurnLastTurnAndBestOfHistory) {
  turn_outcome slow{true, false, 1.1}, fast{true, false, 1.5}, hacked{true, true, 5.0}, wrong{false, false, 3.0};
  std::vector<std::vector<turn_outcome>> tasks = {{slow, fast}, {fast, wrong}, {hacked}, {wrong, slow}};
  EXPECT_EQ(fast_at_p_per_turn(tasks, 1.2), (std::vector<double>{0.25, 0.25}));
  EXPECT_EQ(fast_at_p_per_turn(tasks, 1.0), (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(fast_at_p_last_turn(tasks, 1.2), 0.25);
  EXPECT_EQ(fast_at_p_best_of_history(tasks, 1.2), 0.5);
  EXPECT_EQ(fast_at_p_best_of_history(tasks, 1.0), 0.75);
}

}  // namespace
}  // namespace kgym
