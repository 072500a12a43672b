// kgym train: the main job. Runs multi-turn episodes of a policy (the embedded one, or an LLM
// behind an OpenAI-compatible server with an external trainer) on the task suite through the
// actor pipeline, trains it, and keeps everything in a run directory.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "actors/inference.hpp"
#include "cli/commands.hpp"
#include "cli/run_setup.hpp"
#include "cli/sandbox_options.hpp"
#include "cli/web_view.hpp"
#include "messages/enum_names.hpp"
#include "messages/json.hpp"
#include "pipeline/embedded_programs.hpp"
#include "pipeline/progress_log.hpp"
#include "pipeline/run_dir.hpp"
#include "pipeline/train_config.hpp"
#include "pipeline/actor_system_setup.hpp"
#include "runtime/run_resume.hpp"

namespace kgym::cli {

namespace {

command_line train_command_line() {
  command_line c("train", "[--config FILE] [--run-dir DIR] [--iterations N] [--device cpu|cuda] [options]\n"
                          "       kgym train --resume DIR [--iterations N]",
                 "Trains the embedded policy (a softmax over each built-in task's hand-written programs:\n"
                 "fast, partly fused, lazy, wrong, cheating, broken; conditioned on the previous turn's\n"
                 "feedback) with multi-turn episodes through the actor pipeline: inference -> compiler ->\n"
                 "scheduler/gpu_executor (sandbox, profile) -> reward -> learner (TRLOO, MRS, PRS).\n"
                 "Everything goes to the run directory: config.json, episodes.pb (every finished episode),\n"
                 "metrics.jsonl (one line per iteration), checkpoints/, train.log. A killed run continues\n"
                 "with --resume DIR and loses no finished episode. Watch a run with kgym top DIR; plot it\n"
                 "with kgym report DIR.\n");
  c.text("run-dir", "DIR", "where the run lives (default: runs/<date-time>)")
      .text("resume", "DIR", "continue the run in DIR (its config.json; --iterations may extend it)")
      .flag("print-config", "print the resulting configuration and exit")
      .text("web", "[HOST:]PORT", "serve the run's live view to a browser there (kgym web --help; port 0:\n"
                                  "any free one, written to DIR/web.port); beyond loopback it needs a\n"
                                  "secret in $KGYM_WEB_SECRET (or --web-secret-env NAME)")
      .text("web-secret-env", "NAME", "the web view's secret's environment variable (default KGYM_WEB_SECRET)");
  declare_config_options(c);
  return c;
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  auto parsed = train_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  std::string dir;
  TrainConfig config;
  if (a.has("resume")) {
    dir = a.get("resume");
    config = run_dir::read_config(dir);
    if (a.has("iterations")) {
      config.set_iterations(static_cast<int>(a.whole("iterations", 0)));
      std::ofstream(run_dir::config_path(dir)) << to_json(config, true) << "\n";
    }
  } else {
    config = config_from_args(a);
  }
  validate(config);
  if (a.has("print-config")) {
    std::cout << to_json(config, true) << "\n";
    return 0;
  }
  if (config.policy() == OPENAI)
    check_openai_server(config.openai());
  std::optional<web::web_options> web_view;
  if (a.has("web"))
    web_view = web_listen_options(a.get("web"), a);  // a wrong address fails before the run starts

  // The tasks and the embedded policy's programs for them.
  auto suite = load_embedded_suite(std::vector<std::string>{config.tasks_dir()}, {config.tasks().begin(), config.tasks().end()},
                                   config.policy() == EMBEDDED);
  const auto& tasks = suite.tasks;

  if (!a.has("resume")) {
    dir = a.get("run-dir", timestamped_dir("runs"));
    run_dir::create(dir, config);
  }
  setup_logging(run_dir::log_path(dir), a.has("quiet"));

  // What a previous process of this run left: the policy and the finished episodes.
  auto [policy, plan, scheduling, store_cut] = resume_run(dir, config, suite);
  progress_log()->info("run {}: {} tasks x {} episodes x {} turns, {} iterations on {}, starting at iteration {} "
               "({} finished episodes kept{})",
               dir, tasks.size(), config.group_size(), config.turns(), config.iterations(), lower_name(config.device()),
               plan.first_iteration + 1, plan.finished.size(), store_cut ? ", a cut-off record dropped" : "");

  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  configure_actor_system(cfg);
  caf::actor_system system{cfg};

  executor_options exec = sandbox_options(a, config.device());
  auto p = start_pipeline(system, config, exec, dir, policy, suite, scheduling, false);
  if (auto port = system.middleman().publish(p.services.monitor, 0, "127.0.0.1"))
    std::ofstream(run_dir::monitor_port_path(dir)) << *port << "\n";
  else
    spdlog::warn("the monitor is not reachable by kgym top: {}", system.render(port.error()));
  std::unique_ptr<web::web_server> web;
  if (web_view)
    web = start_web_view(dir, *web_view, monitor_live_view(system, p.services.monitor), run_dir::web_port_path(dir));

  auto outcome = run_to_end(system, plan, p);
  std::filesystem::remove(run_dir::monitor_port_path(dir));
  web.reset();
  std::filesystem::remove(run_dir::web_port_path(dir));
  if (!outcome) {
    progress_log()->error("run {} failed: {}", dir, system.render(outcome.error()));
    return 1;
  }
  progress_log()->info("run {} finished: {} iterations, last mean reward {:.3f}, fast@1.2 (last turn) {:.2f}; "
                       "kgym report {} plots it",
                       dir, config.iterations(), outcome->mean_reward(), outcome->fast1_2_last(), dir);
  return 0;
}

}  // namespace kgym::cli
