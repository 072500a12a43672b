#include "pipeline/iteration_metrics.hpp"

#include "pipeline/metrics.hpp"
#include "policy/embedded_policy.hpp"
#include "policy/reward.hpp"

namespace kgym {

IterationMetrics iteration_metrics(const std::vector<Episode>& episodes, const LearnerStep& step,
                                   double lazy_coverage, double wall_s) {
  IterationMetrics m;
  m.set_iteration(step.iteration());
  m.set_policy_version(step.version());
  m.set_episodes(static_cast<int>(episodes.size()));
  std::vector<std::vector<turn_outcome>> outcomes;
  int turns = 0, correct = 0, hacked = 0, lazy = 0, cheat_label = 0, lazy_label = 0, cached = 0;
  double reward = 0, coverage = 0;
  for (const auto& e : episodes) {
    outcomes.emplace_back();
    for (const auto& t : e.turns()) {
      const ExecResult& r = t.result();
      bool ok = r.verdict() == OK;
      outcomes.back().push_back({ok, r.verdict() == HACKED, reward_speedup(r)});
      ++turns;
      reward += t.reward().total();
      correct += ok;
      hacked += r.verdict() == HACKED;
      cached += t.cached();
      if (ok) {
        coverage += r.profile().coverage();
        lazy += r.profile().coverage() < lazy_coverage;
      }
      cheat_label += program_kind(t.action()) == "cheating";
      lazy_label += program_kind(t.action()) == "lazy";
    }
  }
  auto share = [](int part, int whole) { return whole ? static_cast<double>(part) / whole : 0.0; };
  m.set_turns(turns);
  m.set_mean_reward(turns ? reward / turns : 0.0);
  for (double v : fast_at_p_per_turn(outcomes, 1.0))
    m.add_fast1_per_turn(v);
  for (double v : fast_at_p_per_turn(outcomes, 1.2))
    m.add_fast1_2_per_turn(v);
  set_fast_summary(m, outcomes);
  m.set_correct_rate(share(correct, turns));
  m.set_hack_rate(share(hacked, turns));
  m.set_lazy_rate(share(lazy, correct));
  m.set_mean_coverage(correct ? coverage / correct : 0.0);
  m.set_cheat_share(share(cheat_label, turns));
  m.set_lazy_share(share(lazy_label, turns));
  m.set_mrs_rejected_rate(share(step.mrs_rejected_turns(), step.turns()));
  m.set_prs_rejected_rate(share(step.prs_rejected_turns(), step.turns()));
  m.set_eval_cache_hit_rate(share(cached, turns));
  m.set_mean_staleness(step.mean_staleness());
  m.set_mean_abs_log_ratio(step.mean_abs_log_ratio());
  m.set_wall_s(wall_s);
  m.set_episodes_per_s(wall_s > 0 ? episodes.size() / wall_s : 0.0);
  return m;
}

IterationMetrics iteration_metrics(const IterationBatch& batch, const LearnerStep& step, double lazy_coverage) {
  return iteration_metrics(std::vector<Episode>(batch.episodes().begin(), batch.episodes().end()), step,
                           lazy_coverage, batch.wall_s());
}

}  // namespace kgym
