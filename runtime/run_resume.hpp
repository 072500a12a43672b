// What a run directory hands the next process of its run (kgym train, a fresh run or
// --resume): the latest checkpoint's policy (or a fresh one), the plan from that policy's
// iteration on with the episodes already finished there (kept, not run again), and every
// stored evaluation as the scheduler's cache, so a resumed run evaluates no program twice.
#pragma once

#include <string>

#include "actors/run_controller.hpp"
#include "actors/scheduler.hpp"
#include "pipeline/embedded_programs.hpp"

namespace kgym {

struct resumed_run {
  EmbeddedPolicy policy;
  run_plan plan;
  scheduler_options scheduling;
  bool store_cut = false;  // the episode store ended in a record cut short (dropped)
};

// Reads `dir` (run_dir's layout) for a run of `config` over `suite`; also drops the metrics
// lines of the iterations it will run again.
resumed_run resume_run(const std::string& dir, const TrainConfig& config, const embedded_suite& suite);

}  // namespace kgym
