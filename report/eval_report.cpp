#include "messages/enum_names.hpp"
#include "report/eval_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "pipeline/metrics.hpp"
#include "policy/reward.hpp"

namespace kgym {

EvalReport eval_report(const std::vector<Episode>& episodes, double lazy_coverage) {
  EvalReport report;
  std::vector<std::vector<turn_outcome>> outcomes;
  std::map<std::string, EvalTaskRow> rows;
  std::map<std::string, int> fast_samples;
  int turns = 0, correct = 0, hacked = 0, lazy = 0;
  double coverage = 0;
  size_t longest = 0;
  for (const auto& e : episodes) {
    outcomes.emplace_back();
    EvalTaskRow& row = rows[e.task_id()];
    row.set_task_id(e.task_id());
    row.set_samples(row.samples() + 1);
    bool fast = false;
    for (const auto& t : e.turns()) {
      const ExecResult& r = t.result();
      bool ok = r.verdict() == OK;
      double speedup = reward_speedup(r);
      outcomes.back().push_back({ok, r.verdict() == HACKED, speedup});
      fast = fast || is_fast(outcomes.back().back(), 1.2);
      ++turns;
      correct += ok;
      hacked += r.verdict() == HACKED;
      row.set_hacked_turns(row.hacked_turns() + (r.verdict() == HACKED));
      if (ok) {
        coverage += r.profile().coverage();
        lazy += r.profile().coverage() < lazy_coverage;
        row.set_best_speedup(std::max(row.best_speedup(), speedup));
      }
    }
    fast_samples[e.task_id()] += fast;
    if (row.samples() == 1 && e.turns_size() > 0)
      row.set_last_verdict(e.turns(e.turns_size() - 1).result().verdict());
    longest = std::max(longest, static_cast<size_t>(e.turns_size()));
  }
  auto share = [](double part, double whole) { return whole > 0 ? part / whole : 0.0; };
  auto fast1 = fast_at_p_per_turn(outcomes, 1.0);
  auto fast12 = fast_at_p_per_turn(outcomes, 1.2);
  for (size_t t = 0; t < longest; ++t) {
    EvalTurnRow* turn = report.add_per_turn();
    turn->set_turn(static_cast<int>(t + 1));
    turn->set_fast1(fast1[t]);
    turn->set_fast1_2(fast12[t]);
    // Each episode stands by its answer at turn t (its last one if it ended before).
    int n = 0, ok = 0, bad = 0, slack = 0;
    for (size_t e = 0; e < outcomes.size(); ++e) {
      if (outcomes[e].empty())
        continue;
      const turn_outcome& o = outcomes[e][std::min(t, outcomes[e].size() - 1)];
      const Turn& source = episodes[e].turns(static_cast<int>(std::min(t, outcomes[e].size() - 1)));
      ++n;
      ok += o.correct;
      bad += o.hacked;
      slack += o.correct && source.result().profile().coverage() < lazy_coverage;
    }
    turn->set_correct(share(ok, n));
    turn->set_hacked(share(bad, n));
    turn->set_lazy(share(slack, ok));
  }
  report.set_tasks(static_cast<int>(rows.size()));
  report.set_samples(rows.empty() ? 0 : static_cast<int>(episodes.size() / rows.size()));
  report.set_turns(static_cast<int>(longest));
  set_fast_summary(report, outcomes);
  report.set_hack_rate(share(hacked, turns));
  report.set_lazy_rate(share(lazy, correct));
  report.set_correct_rate(share(correct, turns));
  report.set_mean_coverage(share(coverage, correct));
  for (auto& [id, row] : rows) {
    row.set_fast1_2_best(share(fast_samples[id], row.samples()));
    *report.add_task_rows() = row;
  }
  return report;
}

std::string eval_markdown(const EvalReport& r) {
  std::string md;
  char line[512];
  std::snprintf(line, sizeof line,
                "# kgym eval: %s%s (version %lld) on %s\n\n%d tasks x %d samples x %d turns; speedups %s.\n\n",
                lower_name(r.policy()).c_str(), r.model().empty() ? "" : (" " + r.model()).c_str(),
                static_cast<long long>(r.policy_version()), lower_name(r.device()).c_str(), r.tasks(), r.samples(), r.turns(),
                r.speedup_evidence().c_str());
  md += line;
  md += "| turn | Fast@1 | Fast@1.2 | correct | hacked | lazy |\n|---|---|---|---|---|---|\n";
  for (const auto& t : r.per_turn()) {
    std::snprintf(line, sizeof line, "| %d | %.3f | %.3f | %.3f | %.3f | %.3f |\n", t.turn(), t.fast1(), t.fast1_2(),
                  t.correct(), t.hacked(), t.lazy());
    md += line;
  }
  std::snprintf(line, sizeof line,
                "| last | %.3f | %.3f | | | |\n| best of history | %.3f | %.3f | | | |\n\n"
                "Hacked turns %.3f, lazy (correct, coverage below threshold) %.3f, correct turns %.3f, "
                "mean coverage of correct turns %.3f.\n\n",
                r.fast1_last(), r.fast1_2_last(), r.fast1_best(), r.fast1_2_best(), r.hack_rate(), r.lazy_rate(),
                r.correct_rate(), r.mean_coverage());
  md += line;
  md += "| task | samples | best speedup | Fast@1.2 best | last verdict | hacked turns |\n|---|---|---|---|---|---|\n";
  for (const auto& t : r.task_rows()) {
    std::snprintf(line, sizeof line, "| %s | %d | %.3f | %.3f | %s | %d |\n", t.task_id().c_str(), t.samples(),
                  t.best_speedup(), t.fast1_2_best(), Verdict_Name(t.last_verdict()).c_str(), t.hacked_turns());
    md += line;
  }
  return md;
}

}  // namespace kgym
