// scheduler: the registry of executors on every node, and the placement of evaluations on
// free ones, one at a time per executor, in arrival order. Executors join (local ones at
// spawn, remote ones from `kgym worker` over CAF's middleman) and leave (drained: the
// answer comes once their work in flight is done). Every executor is monitored: work in
// flight on one that dies or goes silent is placed again, so each request gets exactly one
// result. Identical evaluations in flight at once run once; with the evaluation cache, a
// program already evaluated on a task is answered from the cache.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "actors/gpu_executor.hpp"
#include "gpu/executor/sandbox_evaluator.hpp"
#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using join_atom = caf::atom_constant<caf::atom("join")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;

using scheduler_actor =
    caf::typed_actor<caf::replies_to<ExecRequest>::with<ExecResult>,
                     // an executor (a gpu_executor_actor) joins, under a name that results carry
                     caf::reacts_to<join_atom, std::string, caf::strong_actor_ptr>,
                     // no new work for it; answered once it has nothing in flight
                     caf::replies_to<leave_atom, caf::strong_actor_ptr>::with<caf::ok_atom>,
                     // the queue and the executors, now
                     caf::replies_to<status_atom>::with<SchedulerStatus>,
                     // its own timer: executors holding a request past its deadline are lost
                     caf::reacts_to<deadline_atom>,
                     // its client withdrew the request with this id: it is answered CANCELLED at
                     // once; queued work for it is dropped, work in flight stopped (unless an
                     // identical request still waits for it). False: no such request waits here.
                     caf::replies_to<cancel_atom, std::string>::with<bool>>;

struct scheduler_options {
  bool cache = true;
  // Earlier results for the cache, by evaluation_key (a resumed run's stored turns).
  std::vector<std::pair<std::string, ExecResult>> preload;
  // A placed request must be answered within placement_deadline; an executor that lets one
  // pass is lost and its work placed again (a black hole, a hung node whose link stays up).
  // The executor's own bounds (gpu/executor/sandbox_evaluator.hpp) and the slack:
  int attempts = default_own_memory_attempts;
  std::chrono::milliseconds start_timeout = default_start_timeout;
  std::chrono::milliseconds deadline_slack{60000};
  size_t cache_limit = 10000;  // results kept, the oldest forgotten first (memory stays bounded)
};

// How long an executor may hold `request` once placed: per attempt, a sandbox start and the
// evaluation's total limit; its extensions' compile limit when it builds any; and the slack.
std::chrono::milliseconds placement_deadline(const ExecRequest& request, const scheduler_options& options);

scheduler_actor spawn_scheduler(caf::actor_system& system, std::vector<gpu_executor_actor> executors,
                                scheduler_options options);

// The cache's key: what decides an evaluation's result. The task's id and content (its
// source and sizes, not where it was loaded from), the device, the options and the program's
// content hash (CompileResult.source_hash): two tasks sent without an id, or one task under
// other tolerances, never share a result.
std::string evaluation_key(const Task& task, Device device, const EvalOptions& options,
                           const std::string& source_hash);
std::string evaluation_key(const ExecRequest& request);

}  // namespace kgym
