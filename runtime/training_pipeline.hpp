// The training pipeline as one thing to build, run and stop: executors, inference, compiler,
// scheduler, reward, monitor and learner, and a run controller that drives a run_plan through
// them. `kgym train` and `kgym eval` (cli/) and bench/control_plane_bench build it here.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <string>
#include <vector>

#include "actors/compiler.hpp"
#include "actors/episode.hpp"
#include "actors/gpu_executor.hpp"
#include "actors/learner.hpp"
#include "actors/run_controller.hpp"
#include "actors/scheduler.hpp"
#include "gpu/executor/sandbox_evaluator.hpp"
#include "pipeline/embedded_programs.hpp"

namespace kgym {

struct training_pipeline {
  std::vector<gpu_executor_actor> executors;
  episode_services services;
  learner_actor learner;
  bool own_compiler = true;  // false: the caller's (kept_services), not stopped with the rest
};

// Actors a caller keeps across pipelines (null: the pipeline makes its own and stops it with the
// rest). bench/control_plane_bench keeps one compiler, its parsed programs cached, across its
// runs: a compiler per run would make it measure parsing, not the pipeline.
struct kept_services {
  compiler_actor compiler;
};

// The options every evaluation of a run is sent with.
EvalOptions run_eval_options(const TrainConfig& config);

// The pipeline over `executors` (the compiler's parser runs `python`; candidates run on
// `device`). `dir`: the run's directory (metrics, checkpoints; "" keeps nothing on disk).
// `evaluate_only` (kgym eval): a learner that computes metrics and changes nothing: no trainer,
// nothing written to `dir` but the episodes.
training_pipeline start_pipeline(caf::actor_system& system, const TrainConfig& config,
                                 std::vector<gpu_executor_actor> executors, const std::string& python, Device device,
                                 const std::string& dir, const EmbeddedPolicy& policy, const embedded_suite& suite,
                                 const scheduler_options& scheduling, bool evaluate_only,
                                 const kept_services& kept = {});

// The same with config.executors() sandbox executors of `exec`.
training_pipeline start_pipeline(caf::actor_system& system, const TrainConfig& config, const executor_options& exec,
                                 const std::string& dir, const EmbeddedPolicy& policy, const embedded_suite& suite,
                                 const scheduler_options& scheduling, bool evaluate_only);

// Runs `plan` through the pipeline to its last iteration, then stops the pipeline: the last
// iteration's metrics, or why the run failed.
caf::expected<IterationMetrics> run_to_end(caf::actor_system& system, const run_plan& plan,
                                           const training_pipeline& p);

}  // namespace kgym
