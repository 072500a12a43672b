// kgym train: the main job. Runs multi-turn episodes of a policy (the embedded one, or an LLM
// behind an OpenAI-compatible server with an external trainer) on the task suite through the
// actor pipeline, trains it, and keeps everything in a run directory.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "actors/compiler.hpp"
#include "actors/episode.hpp"
#include "actors/gpu_executor.hpp"
#include "actors/inference.hpp"
#include "actors/learner.hpp"
#include "actors/monitor.hpp"
#include "actors/reward.hpp"
#include "actors/run_controller.hpp"
#include "actors/scheduler.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/sandbox_options.hpp"
#include "messages/json.hpp"
#include "pipeline/embedded_programs.hpp"
#include "pipeline/episode_store.hpp"
#include "pipeline/paths.hpp"
#include "pipeline/progress_log.hpp"
#include "pipeline/run_dir.hpp"
#include "pipeline/task_loader.hpp"
#include "pipeline/train_config.hpp"
#include "policy/embedded_policy.hpp"

namespace kgym::cli {

namespace {

const char* train_help = R"(usage: kgym train [--config FILE] [--run-dir DIR] [--iterations N] [--device cpu|cuda] [options]
       kgym train --resume DIR [--iterations N]

Trains the embedded policy (a softmax over each built-in task's hand-written programs:
fast, partly fused, lazy, wrong, cheating, broken; conditioned on the previous turn's
feedback) with multi-turn episodes through the actor pipeline: inference -> compiler ->
scheduler/gpu_executor (sandbox, profile) -> reward -> learner (TRLOO, MRS, PRS).
Everything goes to the run directory: config.json, episodes.pb (every finished episode),
metrics.jsonl (one line per iteration), checkpoints/, train.log. A killed run continues
with --resume DIR and loses no finished episode. Watch a run with kgym top DIR; plot it
with kgym report DIR.

options:
  --config FILE          a JSON object over the defaults (kgym train --print-config shows them)
  --run-dir DIR          where the run lives (default: runs/<date-time>)
  --resume DIR           continue the run in DIR (its config.json; --iterations may extend it)
  --iterations N         training iterations (default 20)
  --device cpu|cuda      where candidates run (default cpu: Triton's interpreter; rewards then
                         use the sandbox's modeled GPU speedup, see README)
  --tasks-dir DIR        task suite (default: the built-in tasks/)
  --task ID              use only this task (repeatable)
  --group-size G         episodes per task and iteration (TRLOO's group; default 16)
  --turns T              turns per episode (default 3)
  --seed N               run seed (sampling, PRS draws; default 1)
  --executors N          sandbox executors (default 2 on cpu, 1 on cuda)
  --advantage trloo|grpo advantage estimator (default trloo)
  --learning-rate X      embedded trainer's step size (default 2.0)
  --no-hacking-check     ablation: hacking evidence no longer changes the verdict
  --no-pr                ablation: no profiling-based (coverage) reward
  --no-prs               ablation: no profiling-based rejection sampling
  --no-mrs               ablation: no mismatch rejection sampling
  --no-eval-cache        evaluate every answer, even a program already evaluated on the task
  --policy embedded|openai
                         openai: an LLM behind an OpenAI-compatible server (vLLM, SGLang, llama.cpp,
                         deploy/trainer/serve_model.py); the config's "openai" object has every setting
  --openai-url URL       the server's base URL (default http://127.0.0.1:8000/v1); the API key, if any,
                         comes from $OPENAI_API_KEY (openai.api_key_env names another variable)
  --model NAME           the served model's name
  --api chat|completions which endpoint to use (default chat)
  --temperature X        sampling temperature (default 1.0)
  --max-tokens N         longest answer (default 4096)
  --trainer ENDPOINT     the external trainer (ZeroMQ, e.g. tcp://127.0.0.1:5600;
                         deploy/trainer/reference_trainer.py); without it an openai run only evaluates
  --print-config         print the resulting configuration and exit
  --python PATH          the Python with torch and triton (default: python3, or $KGYM_PYTHON)
  --no-cupti             on cuda, do not inject the CUPTI profiler
  --quiet                no progress lines (the log file still gets them)
)";

TrainConfig config_from_args(const args& a) {
  std::string device = a.get("device", "cpu");
  TrainConfig c = a.has("config") ? load_train_config(a.get("config"), device) : default_train_config(device);
  if (a.has("device"))
    c.set_device(device);
  if (a.has("iterations"))
    c.set_iterations(static_cast<int>(a.number("iterations", 0)));
  if (a.has("tasks-dir"))
    c.set_tasks_dir(a.get("tasks-dir"));
  if (a.has("task")) {
    c.clear_tasks();
    for (const auto& t : a.all("task"))
      c.add_tasks(t);
  }
  if (a.has("group-size"))
    c.set_group_size(static_cast<int>(a.number("group-size", 0)));
  if (a.has("turns"))
    c.set_turns(static_cast<int>(a.number("turns", 0)));
  if (a.has("seed"))
    c.set_seed(static_cast<uint64_t>(a.number("seed", 0)));
  if (a.has("executors"))
    c.set_executors(static_cast<int>(a.number("executors", 0)));
  if (a.has("advantage"))
    c.set_advantage(a.get("advantage"));
  if (a.has("learning-rate"))
    c.set_learning_rate(a.number("learning-rate", 0));
  if (a.has("no-hacking-check"))
    c.set_hacking_check(false);
  if (a.has("no-pr"))
    c.mutable_reward()->set_coverage_weight(0);
  if (a.has("no-prs"))
    c.set_prs(false);
  if (a.has("no-mrs"))
    c.set_mrs(false);
  if (a.has("no-eval-cache"))
    c.set_eval_cache(false);
  if (a.has("policy"))
    c.set_policy(a.get("policy"));
  if (a.has("openai-url"))
    c.mutable_openai()->set_base_url(a.get("openai-url"));
  if (a.has("model"))
    c.mutable_openai()->set_model(a.get("model"));
  if (a.has("api"))
    c.mutable_openai()->set_api(a.get("api"));
  if (a.has("temperature"))
    c.mutable_openai()->set_temperature(a.number("temperature", 1.0));
  if (a.has("max-tokens"))
    c.mutable_openai()->set_max_tokens(static_cast<int>(a.number("max-tokens", 0)));
  if (a.has("trainer"))
    c.mutable_trainer()->set_endpoint(a.get("trainer"));
  if (c.tasks_dir().empty())
    c.set_tasks_dir(builtin_tasks_dir());
  return c;
}

std::string default_run_dir() {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::string("runs/") + stamp;
}

// Everything goes to the run's train.log; progress lines (and warnings) also to the console.
void setup_logging(const std::string& dir, bool quiet) {
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(run_dir::log_path(dir));
  auto console = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  console->set_level(quiet ? spdlog::level::off : spdlog::level::info);
  auto details = std::make_shared<spdlog::logger>("kgym", spdlog::sinks_init_list{file});
  auto progress = std::make_shared<spdlog::logger>("progress", spdlog::sinks_init_list{file, console});
  for (const auto& logger : {details, progress}) {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %v");
    logger->flush_on(spdlog::level::info);
    logger->set_level(spdlog::level::info);
  }
  spdlog::set_default_logger(details);
  spdlog::register_logger(progress);
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  args a(argv,
         {"config", "run-dir", "resume", "iterations", "device", "tasks-dir", "task", "group-size", "turns", "seed",
          "executors", "advantage", "learning-rate", "python", "policy", "openai-url", "model", "api", "temperature",
          "max-tokens", "trainer"},
         {"help", "no-hacking-check", "no-pr", "no-prs", "no-mrs", "no-eval-cache", "print-config", "no-cupti",
          "quiet"});
  if (a.has("help")) {
    std::cout << train_help;
    return 0;
  }
  std::string dir;
  TrainConfig config;
  if (a.has("resume")) {
    dir = a.get("resume");
    config = run_dir::read_config(dir);
    if (a.has("iterations")) {
      config.set_iterations(static_cast<int>(a.number("iterations", 0)));
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

  // The tasks and the embedded policy's programs for them.
  auto suite = load_embedded_suite(config.tasks_dir(), {config.tasks().begin(), config.tasks().end()});
  const auto& tasks = suite.tasks;

  if (!a.has("resume")) {
    dir = a.get("run-dir", default_run_dir());
    run_dir::create(dir, config);
  }
  setup_logging(dir, a.has("quiet"));

  // What a previous process of this run left: the policy and the finished episodes.
  EmbeddedPolicy policy = run_dir::latest_checkpoint(dir).value_or(make_embedded_policy(suite.actions));
  run_dir::keep_metrics_before(dir, policy.version());
  run_plan plan;
  plan.config = config;
  plan.tasks = tasks;
  plan.first_iteration = policy.version();
  plan.store_path = run_dir::episodes_path(dir);
  scheduler_options scheduling;
  scheduling.cache = config.eval_cache();
  auto stored = read_episodes(plan.store_path);
  for (auto& e : stored.episodes) {
    for (const auto& t : e.turns())
      if (!t.source_hash().empty() && t.result().verdict() != COMPILE_ERROR)
        scheduling.preload.emplace_back(e.task_id() + "/" + t.source_hash(), t.result());
    if (e.iteration() >= plan.first_iteration)
      plan.finished[e.episode_id()] = std::move(e);
  }
  progress_log()->info("run {}: {} tasks x {} episodes x {} turns, {} iterations on {}, starting at iteration {} "
               "({} finished episodes kept{})",
               dir, tasks.size(), config.group_size(), config.turns(), config.iterations(), config.device(),
               plan.first_iteration + 1, plan.finished.size(), stored.truncated ? ", a cut-off record dropped" : "");

  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  add_message_types(cfg);
  caf::actor_system system{cfg};

  executor_options exec = sandbox_options(a, config.device() == "cuda" ? CUDA : CPU);
  std::vector<gpu_executor_actor> executors;
  for (int i = 0; i < config.executors(); ++i)
    executors.push_back(spawn_gpu_executor(system, exec));

  episode_services services;
  bool llm = config.policy() == "openai";
  services.inference = llm ? spawn_openai_inference(system, config.openai(), policy.version())
                           : spawn_embedded_inference(system, policy, suite.programs);
  services.compiler = spawn_compiler(system, exec.launch.python);
  services.scheduler = spawn_scheduler(system, executors, scheduling);
  services.reward = spawn_reward(system, config.reward());
  services.monitor = spawn_monitor(system, dir);
  services.device = exec.launch.device;
  services.options = config.eval();
  services.options.set_no_hacking_check(!config.hacking_check());
  services.context_turns = config.context_turns();
  if (llm)
    services.context_token_budget = config.openai().prompt_token_budget();
  learner_options learning;
  learning.settings = learner_settings_from(config);
  learning.lazy_coverage = config.prs_threshold();
  learning.run_dir = dir;
  learning.inference = services.inference;
  learning.monitor = services.monitor;
  learning.trainer = config.trainer();
  learning.system_prompt = config.openai().system_prompt();
  if (llm && config.trainer().endpoint().empty())
    progress_log()->warn("policy openai without --trainer: episodes are evaluated, nothing is trained");
  auto learner = llm ? spawn_trainer_learner(system, policy.version(), learning) : spawn_learner(system, policy, learning);

  if (auto port = system.middleman().publish(services.monitor, 0, "127.0.0.1"))
    std::ofstream(run_dir::monitor_port_path(dir)) << *port << "\n";
  else
    spdlog::warn("the monitor is not reachable by kgym top: {}", system.render(port.error()));

  auto controller = spawn_run_controller(system, plan, services, learner);
  int status = 0;
  caf::scoped_actor self{system};
  self->request(controller, caf::infinite, run_atom::value)
      .receive(
          [&](const IterationMetrics& last) {
            progress_log()->info("run {} finished: {} iterations, last mean reward {:.3f}, fast@1.2 (last turn) {:.2f}; "
                         "kgym report {} plots it",
                         dir, config.iterations(), last.mean_reward(), last.fast1_2_last(), dir);
          },
          [&](const caf::error& error) {
            progress_log()->error("run {} failed: {}", dir, system.render(error));
            status = 1;
          });
  std::filesystem::remove(run_dir::monitor_port_path(dir));
  for (const auto& e : executors)
    self->send_exit(e, caf::exit_reason::user_shutdown);
  self->send_exit(services.compiler, caf::exit_reason::user_shutdown);
  self->send_exit(learner, caf::exit_reason::user_shutdown);
  self->send_exit(services.monitor, caf::exit_reason::user_shutdown);
  self->send_exit(services.inference, caf::exit_reason::user_shutdown);
  self->send_exit(services.scheduler, caf::exit_reason::user_shutdown);
  self->send_exit(services.reward, caf::exit_reason::user_shutdown);
  return status;
}

}  // namespace kgym::cli
