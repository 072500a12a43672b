// What `kgym train` and `kgym eval` share: the run configuration from flags, the logs, and
// the actor pipeline (executors, inference, compiler, scheduler, reward, monitor, learner).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <set>
#include <string>
#include <vector>

#include "actors/episode.hpp"
#include "actors/gpu_executor.hpp"
#include "actors/learner.hpp"
#include "actors/run_controller.hpp"
#include "actors/scheduler.hpp"
#include "cli/command_line.hpp"
#include "gpu/executor/sandbox_evaluator.hpp"
#include "pipeline/embedded_programs.hpp"

namespace kgym::cli {

// The options that set a TrainConfig (--config FILE, then the flags over it), declared on a
// run command's command line after its own.
void declare_config_options(command_line& c);
TrainConfig config_from_args(const args& a);

// PARENT/<date>-<time>: where a run or an evaluation goes unless told.
std::string timestamped_dir(const std::string& parent);

// Everything to DIR's train.log; progress lines (and warnings) also to the console.
void setup_logging(const std::string& log_path, bool quiet);

struct pipeline {
  std::vector<gpu_executor_actor> executors;
  episode_services services;
  learner_actor learner;
};

// The options every evaluation of a run is sent with.
EvalOptions run_eval_options(const TrainConfig& config);

// `evaluate_only` (kgym eval): a learner that computes metrics and changes nothing: no trainer,
// nothing written to `dir` but the episodes.
pipeline start_pipeline(caf::actor_system& system, const TrainConfig& config, const executor_options& exec,
                        const std::string& dir, const EmbeddedPolicy& policy, const embedded_suite& suite,
                        const scheduler_options& scheduling, bool evaluate_only);

// Runs `plan` through the pipeline to its last iteration, then stops the pipeline: the last
// iteration's metrics, or why the run failed.
caf::expected<IterationMetrics> run_to_end(caf::actor_system& system, const run_plan& plan, const pipeline& p);

}  // namespace kgym::cli
