// kgym eval: a policy on a task suite (the built-in tasks, or levels of a KernelBench
// checkout) with N turns per task (sequential test-time scaling): Fast@1 and Fast@1.2 per
// turn, for the last turn and best of history, hacked and lazy shares. A table on screen,
// eval.md and eval.json on disk, eval.png; the episodes stay in OUT/episodes.pb.
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "actors/inference.hpp"
#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_setup.hpp"
#include "cli/sandbox_options.hpp"
#include "messages/caf_types.hpp"
#include "messages/enum_names.hpp"
#include "messages/json.hpp"
#include "pipeline/episode_store.hpp"
#include "report/eval_report.hpp"
#include "report/line_charts.hpp"
#include "pipeline/progress_log.hpp"
#include "pipeline/run_dir.hpp"
#include "pipeline/train_config.hpp"
#include "policy/embedded_policy.hpp"
#include "pipeline/actor_system_setup.hpp"

namespace kgym::cli {

namespace {

namespace fs = std::filesystem;

command_line eval_command_line() {
  command_line c("eval", "[--policy embedded|openai] [--turns N] [--samples K] [--out DIR] [options]",
                 "Evaluates a policy: K episodes of N turns on every task (each turn sees the earlier turns'\n"
                 "feedback: sequential test-time scaling), nothing trained. Prints Fast@1 and Fast@1.2 per\n"
                 "turn, for the last turn and best of history, with hacked and lazy shares; writes\n"
                 "OUT/eval.md, OUT/eval.json (kgym.EvalReport), OUT/eval.png and OUT/episodes.pb.\n");
  c.text("out", "DIR", "where the evaluation goes (default evals/<date-time>)")
      .whole("samples", "K", "episodes per task (default 1); --turns N: turns per task (default 4)")
      .text("checkpoint", "RUN_DIR", "embedded policy: the latest checkpoint of a kgym train run\n"
                                     "(default: the untrained policy)")
      .text("kernelbench", "PATH", "a KernelBench checkout (its KernelBench/levelN directories)")
      .repeated("level", "N", "KernelBench level to use (default 1)");
  declare_config_options(c);
  return c;
}

std::vector<std::string> kernelbench_levels(const std::string& root, const std::vector<std::string>& levels) {
  std::vector<std::string> dirs;
  for (const auto& level : levels) {
    std::string dir;
    for (const auto& candidate : {root + "/KernelBench/level" + level, root + "/level" + level})
      if (fs::is_directory(candidate))
        dir = candidate;
    if (dir.empty())
      throw std::invalid_argument("no KernelBench level " + level + " under " + root +
                                  " (expected KernelBench/level" + level + "/ with one task per .py file)");
    dirs.push_back(dir);
  }
  return dirs;
}

void print_table(const EvalReport& r) {
  std::printf("%-16s %7s %8s %8s %7s %6s\n", "turn", "fast@1", "fast@1.2", "correct", "hacked", "lazy");
  for (const auto& t : r.per_turn())
    std::printf("%-16d %7.3f %8.3f %8.3f %7.3f %6.3f\n", t.turn(), t.fast1(), t.fast1_2(), t.correct(), t.hacked(),
                t.lazy());
  std::printf("%-16s %7.3f %8.3f\n%-16s %7.3f %8.3f\n", "last", r.fast1_last(), r.fast1_2_last(), "best of history",
              r.fast1_best(), r.fast1_2_best());
  std::printf("hacked %.3f of turns, lazy %.3f of correct turns, correct %.3f, mean coverage %.3f; speedups %s\n",
              r.hack_rate(), r.lazy_rate(), r.correct_rate(), r.mean_coverage(), r.speedup_evidence().c_str());
}

void write_outputs(const std::string& out, const EvalReport& report) {
  std::ofstream(out + "/eval.json") << to_json(report, true) << "\n";
  std::ofstream(out + "/eval.md") << eval_markdown(report);
  auto per_turn = [&](const std::string& name, double (EvalTurnRow::*field)() const) {
    plot_series s{name, {}};
    for (const auto& t : report.per_turn())
      s.values.push_back((t.*field)());
    return s;
  };
  try {  // the report is on disk already: a missing plotter costs the chart only
    write_line_charts_png(out + "/eval.png",
                          {{"Fast@p per turn (answer at that turn)",
                            {per_turn("fast@1", &EvalTurnRow::fast1), per_turn("fast@1.2", &EvalTurnRow::fast1_2)}},
                           {"correct, hacked, lazy per turn",
                            {per_turn("correct", &EvalTurnRow::correct), per_turn("hacked", &EvalTurnRow::hacked),
                             per_turn("lazy", &EvalTurnRow::lazy)}}},
                          "turn");
  } catch (const std::runtime_error& e) {
    progress_log()->warn("eval.png not drawn: {}", e.what());
  }
}

}  // namespace

int run_eval(const std::vector<std::string>& argv) {
  auto parsed = eval_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  TrainConfig config = config_from_args(a);
  config.set_iterations(1);
  config.set_group_size(static_cast<int>(a.whole("samples", 1)));
  config.set_turns(a.has("turns") ? config.turns() : 4);
  validate(config);
  if (config.policy() == OPENAI)
    check_openai_server(config.openai());
  std::vector<std::string> dirs = {config.tasks_dir()};
  if (a.has("kernelbench"))
    dirs = kernelbench_levels(a.get("kernelbench"), a.has("level") ? a.all("level") : std::vector<std::string>{"1"});
  bool embedded = config.policy() == EMBEDDED;
  if (embedded && a.has("kernelbench"))
    throw std::invalid_argument("the embedded policy only has programs for the built-in tasks; evaluate a "
                                "KernelBench checkout with --policy openai");
  auto suite = load_embedded_suite(dirs, {config.tasks().begin(), config.tasks().end()}, embedded);

  std::string out = a.get("out", timestamped_dir("evals"));
  run_dir::create(out, config);
  setup_logging(out + "/eval.log", a.has("quiet"));
  EmbeddedPolicy policy = make_embedded_policy(suite.actions);
  if (a.has("checkpoint")) {
    auto trained = run_dir::latest_checkpoint(a.get("checkpoint"));
    if (!trained)
      throw std::invalid_argument("no checkpoint in " + a.get("checkpoint") + "/checkpoints (a kgym train run dir)");
    policy = *trained;
  }
  progress_log()->info("eval {}: {} policy{} ({}), {} tasks x {} samples x {} turns on {}", out, lower_name(config.policy()),
                       embedded ? "" : " " + config.openai().model(),
                       embedded ? "version " + std::to_string(policy.version()) : "the version the server serves",
                       suite.tasks.size(), config.group_size(), config.turns(), lower_name(config.device()));

  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system system{cfg};
  executor_options exec = sandbox_options(a, config.device());
  scheduler_options scheduling;
  scheduling.cache = config.eval_cache();
  auto p = start_pipeline(system, config, exec, out, policy, suite, scheduling, true);
  run_plan plan;
  plan.config = config;
  plan.tasks = suite.tasks;
  plan.store_path = run_dir::episodes_path(out);
  plan.quiet = true;
  auto started = std::chrono::steady_clock::now();
  auto outcome = run_to_end(system, plan, p);
  if (!outcome) {
    progress_log()->error("eval {} failed: {}", out, system.render(outcome.error()));
    return 1;
  }

  auto stored = read_episodes(plan.store_path);
  EvalReport report = eval_report(stored.episodes, config.prs_threshold());
  report.set_policy(config.policy());
  report.set_model(embedded ? "" : config.openai().model());
  // An LLM's version is what the server said it served (its system_fingerprint, kgym-v<N>).
  int64_t version = embedded ? policy.version() : 0;
  for (const auto& e : stored.episodes)
    for (const auto& t : e.turns())
      version = std::max(version, t.policy_version());
  report.set_policy_version(version);
  report.set_device(config.device());
  report.set_speedup_evidence(config.device() == CUDA ? "measured (the judge's clock)" : "modeled (CPU cost model)");
  report.set_wall_s(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  write_outputs(out, report);
  if (!a.has("quiet"))
    print_table(report);
  progress_log()->info("eval {} done in {:.1f} s: {}/eval.md, eval.json, eval.png", out, report.wall_s(), out);
  return 0;
}

}  // namespace kgym::cli
