// scheduler: owns the executors and places evaluations on free ones, one at a time per
// executor, in arrival order. Identical evaluations (same task, same program) in flight at
// once run once; with the evaluation cache, a program already evaluated on a task is
// answered from the cache. An executor that fails a request yields an INTERNAL_ERROR
// result for it (never a lost request).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <utility>
#include <vector>

#include "actors/gpu_executor.hpp"
#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using scheduler_actor = caf::typed_actor<caf::replies_to<ExecRequest>::with<ExecResult>>;

struct scheduler_options {
  bool cache = true;
  // Earlier results for the cache, by evaluation_key (a resumed run's stored turns).
  std::vector<std::pair<std::string, ExecResult>> preload;
};

scheduler_actor spawn_scheduler(caf::actor_system& system, std::vector<gpu_executor_actor> executors,
                                scheduler_options options);

// The cache's key: the task and the program's content.
std::string evaluation_key(const std::string& task_id, const std::string& source);

}  // namespace kgym
