#include "cli/run_setup.hpp"
#include "cli/sandbox_options.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <ctime>

#include "pipeline/paths.hpp"
#include "pipeline/train_config.hpp"

namespace kgym::cli {

void declare_config_options(command_line& c) {
  c.text("config", "FILE", "a JSON object over the defaults (kgym train --print-config shows them)")
      .whole("iterations", "N", "training iterations (default 20)")
      .choice<Device>("device", "where candidates run (default cpu: Triton's interpreter; rewards then\n"
                                "use the sandbox's modeled GPU speedup, see README)")
      .env("KGYM_DEVICE")
      .text("tasks-dir", "DIR", "task suite (default: the built-in tasks/)")
      .repeated("task", "ID", "use only this task")
      .whole("group-size", "G", "episodes per task and iteration (TRLOO's group; default 16)")
      .whole("turns", "T", "turns per episode (default 3)")
      .whole("seed", "N", "run seed (sampling, PRS draws; default 1)")
      .whole("executors", "N", "sandbox executors (default 2 on cpu, 1 on cuda; on cuda one GPU each:\n"
                               "N > 1 takes the first N of CUDA_VISIBLE_DEVICES, unset: GPUs 0..N-1)")
      .choice<Advantage>("advantage", "advantage estimator (default trloo)")
      .number("learning-rate", "X", "embedded trainer's step size (default 2.0)")
      .flag("no-hacking-check", "ablation: hacking evidence no longer changes the verdict")
      .flag("no-pr", "ablation: no profiling-based (coverage) reward")
      .flag("no-prs", "ablation: no profiling-based rejection sampling")
      .flag("no-mrs", "ablation: no mismatch rejection sampling")
      .flag("no-eval-cache", "evaluate every answer, even a program already evaluated on the task")
      .text("trainer", "ENDPOINT", "the external trainer (ZeroMQ, e.g. tcp://127.0.0.1:5600;\n"
                                   "deploy/trainer/reference_trainer.py); without it an openai run only evaluates")
      .flag("quiet", "no progress lines (the log file still gets them)")
      .section("policy:")
      .choice<PolicyKind>("policy", "openai: an LLM behind an OpenAI-compatible server (vLLM, SGLang, llama.cpp,\n"
                                    "deploy/trainer/serve_model.py); the config's \"openai\" object has every\n"
                                    "setting (default embedded)")
      .text("openai-url", "URL", "the server's base URL (default http://127.0.0.1:8000/v1); the API key, if any,\n"
                                 "comes from $OPENAI_API_KEY (openai.api_key_env names another variable)")
      .text("model", "NAME", "the served model's name")
      .choice<OpenAIApi>("api", "which endpoint to use (default chat)")
      .number("temperature", "X", "sampling temperature (default 1.0)")
      .whole("max-tokens", "N", "longest answer (default 4096)");
  c.section("sandbox:");
  declare_sandbox_options(c);
}

std::string timestamped_dir(const std::string& parent) {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return parent + "/" + stamp;
}

TrainConfig config_from_args(const args& a) {
  const Device device = choice<Device>(a, "device", CPU);
  TrainConfig c = a.has("config") ? load_train_config(a.get("config"), device) : default_train_config(device);
  if (a.has("device"))
    c.set_device(device);
  if (a.has("iterations"))
    c.set_iterations(static_cast<int>(a.whole("iterations", 0)));
  if (a.has("tasks-dir"))
    c.set_tasks_dir(a.get("tasks-dir"));
  if (a.has("task")) {
    c.clear_tasks();
    for (const auto& t : a.all("task"))
      c.add_tasks(t);
  }
  if (a.has("group-size"))
    c.set_group_size(static_cast<int>(a.whole("group-size", 0)));
  if (a.has("turns"))
    c.set_turns(static_cast<int>(a.whole("turns", 0)));
  if (a.has("seed"))
    c.set_seed(a.whole("seed", 0));
  if (a.has("executors"))
    c.set_executors(static_cast<int>(a.whole("executors", 0)));
  if (a.has("advantage"))
    c.set_advantage(choice<Advantage>(a, "advantage"));
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
    c.set_policy(choice<PolicyKind>(a, "policy"));
  if (a.has("openai-url"))
    c.mutable_openai()->set_base_url(a.get("openai-url"));
  if (a.has("model"))
    c.mutable_openai()->set_model(a.get("model"));
  if (a.has("api"))
    c.mutable_openai()->set_api(choice<OpenAIApi>(a, "api"));
  if (a.has("temperature"))
    c.mutable_openai()->set_temperature(a.number("temperature", 1.0));
  if (a.has("max-tokens"))
    c.mutable_openai()->set_max_tokens(static_cast<int>(a.whole("max-tokens", 0)));
  if (a.has("trainer"))
    c.mutable_trainer()->set_endpoint(a.get("trainer"));
  if (c.tasks_dir().empty())
    c.set_tasks_dir(builtin_tasks_dir());
  return c;
}

void setup_logging(const std::string& log_path, bool quiet) {
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_path);
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

}  // namespace kgym::cli
