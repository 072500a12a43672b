// kgym check: evaluate candidates for one task through one gpu_executor.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "actors/gpu_executor.hpp"
#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/eval_option_flags.hpp"
#include "cli/sandbox_options.hpp"
#include "gpu/executor/eval_defaults.hpp"
#include "messages/json.hpp"
#include "pipeline/paths.hpp"
#include "pipeline/summary.hpp"
#include "pipeline/task_loader.hpp"
#include "pipeline/actor_system_setup.hpp"

namespace kgym::cli {

namespace {

command_line check_command_line() {
  command_line c("check", "--task PATH [--task PATH ...] --candidate FILE [--candidate FILE ...] [options]",
                 "Evaluates each candidate (a Python file defining class ModelNew) against each task (a\n"
                 "KernelBench file, or a directory with task.py) in a fresh sandboxed process, in order,\n"
                 "through one executor, and prints one summary line per candidate.\n");
  c.repeated("task", "PATH", "task file or directory (required; try tasks/gelu_scale_residual)")
      .repeated("candidate", "FILE",
                "candidate file; 'all' = every file in the task's candidates/;\n"
                "a bare NAME = the task's candidates/NAME.py")
      .choice<Device>("device", "where to run (default: cpu). cpu uses Triton's interpreter.")
      .env("KGYM_DEVICE")
      .flag("json", "print one ExecResult per line (proto3 JSON mapping) instead")
      .whole("trials", "N", "correctness trials with fresh inputs (default 5)")
      .choice<Precision>("precision", "fp32 (default), fp16 or bf16: floating-point inputs and both models\n"
                                      "are cast to it, as KernelBench's --precision")
      .one_of("tolerances", {"kernelbench", "dr_kernel"},
              "default atol/rtol: kernelbench (its current harness: fp32 1e-4,\n"
              "fp16/bf16 1e-2; the default) or dr_kernel (1e-2 for every precision)")
      .one_of("placement", placement_names(),
              "cuda: where each side's intermediates lie while timed. kept (the default): where\n"
              "its process put them; redrawn: moved every 2 batches, each side timed by its fast\n"
              "mode (for GPUs whose speed depends on it, e.g. the H200; about 1.5x the time);\n"
              "checked: moved as redrawn, each side timed as kept unless one shows two modes")
      .number("atol", "X", "absolute tolerance (default: from --tolerances and --precision)")
      .number("rtol", "X", "relative tolerance (default: from --tolerances and --precision)")
      .whole("timing-reps", "N", "timed calls per side at most (default 1000 cuda, 5 cpu); timing\n"
                                 "also stops once each side has 1 s (cuda) or 0.5 s (cpu) timed")
      .number("timeout", "S", "time limit for each phase, seconds (default 60 load, 180/300 others),\n"
                              "and 2*S for the whole evaluation (default 300 cuda, 600 cpu)")
      .whole("memory-mb", "N", "host memory limit of the candidate, kgym's own processes not counted (default 4096 cpu, 16384 cuda)")
      .whole("disk-mb", "N", "the candidate's private /tmp, /var/tmp and /dev/shm together, a\n"
                             "tmpfs as root (default 2048; its pages count against --memory-mb)")
      .flag("gpu-sizes", "on cpu, run the task at its full (GPU) sizes, ignoring task.json");
  declare_eval_option_flags(c, "");
  c.flag("no-hacking-check", "record hacking evidence but do not let it change the verdict\n"
                             "(an ablation, and how bench/ times the reference against itself)")
      .flag("verbose", "log the executor's progress to stderr")
      .config_file();
  declare_sandbox_options(c);
  return c;
}

// 'all', a bare name of a shipped candidate, or a path.
std::vector<std::string> resolve_candidates(const std::string& task_path, const std::vector<std::string>& given) {
  std::vector<std::string> files;
  for (const auto& c : given) {
    auto shipped = std::filesystem::path(task_path) / "candidates" / (c + ".py");
    if (c == "all") {
      auto found = find_candidates(task_path);
      files.insert(files.end(), found.begin(), found.end());
    } else if (c.find('/') == std::string::npos && std::filesystem::exists(shipped)) {
      files.push_back(shipped.string());
    } else {
      files.push_back(c);
    }
  }
  return files;
}

}  // namespace

int run_check(const std::vector<std::string>& argv) {
  auto parsed = check_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  if (!a.has("task") || !a.has("candidate"))
    throw std::invalid_argument("kgym check needs --task and --candidate (see kgym check --help)");
  spdlog::set_level(a.has("verbose") ? spdlog::level::info : spdlog::level::warn);
  std::vector<std::pair<Task, std::string>> work;  // (task, candidate file), in order
  for (const auto& task_path : a.all("task")) {
    Task task = load_task(task_path);
    for (const auto& file : resolve_candidates(task_path, a.all("candidate")))
      work.emplace_back(task, file);
  }
  const Device device = choice<Device>(a, "device", CPU);

  EvalOptions options;
  options.set_correctness_trials(static_cast<int>(a.whole("trials", 0)));
  options.set_atol(a.number("atol", 0));
  options.set_rtol(a.number("rtol", 0));
  options.set_precision(choice<Precision>(a, "precision", FP32));
  options.set_tolerances(tolerance_set_named(a.get("tolerances", "kernelbench")));
  if (const std::string placement = a.get("placement", ""); !placement.empty()) {
    options.set_placement(placement_named(placement));
    if (device == CPU && options.placement() != PLACEMENT_KEPT)
      spdlog::warn("--placement {} applies on the GPU only (--device cuda); on the CPU each side keeps its placement",
                   placement);
  }
  options.set_timing_reps(static_cast<int>(a.whole("timing-reps", 0)));
  double timeout = a.number("timeout", 0);
  options.set_load_timeout_s(timeout);
  options.set_correctness_timeout_s(timeout);
  options.set_timing_timeout_s(timeout);
  options.set_total_timeout_s(2 * timeout);  // all phases together: twice one phase's limit
  options.set_memory_limit_mb(static_cast<int64_t>(a.whole("memory-mb", 0)));
  options.set_disk_limit_mb(static_cast<int64_t>(a.whole("disk-mb", 0)));
  options.set_apply_cpu_sizes(!a.has("gpu-sizes"));
  options.set_no_hacking_check(a.has("no-hacking-check"));
  apply_eval_option_flags(a, &options);

  executor_options exec = sandbox_options(a, device);

  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system system{cfg};
  auto executor = spawn_gpu_executor(system, exec);
  caf::scoped_actor self{system};
  int failures = 0, n = 0;
  for (const auto& [task, file] : work) {
    ExecRequest request;
    request.set_request_id("check-" + std::to_string(++n));
    *request.mutable_task() = task;
    *request.mutable_candidate() = load_candidate(file);
    request.set_device(exec.launch.device);
    *request.mutable_options() = options;
    self->request(executor, caf::infinite, request)
        .receive(
            [&](const ExecResult& result) {
              std::cout << (a.has("json") ? to_json(result) : summary_line(result)) << std::endl;
            },
            [&](const caf::error& error) {
              ++failures;
              std::cerr << "kgym check: the executor failed: " << system.render(error) << std::endl;
            });
  }
  self->send_exit(executor, caf::exit_reason::user_shutdown);
  return failures == 0 ? 0 : 1;
}

}  // namespace kgym::cli
