// gpu_executor: one device, one evaluation at a time. It supervises the sandbox and always
// answers an ExecRequest with an ExecResult, whatever the candidate does.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "gpu/executor/sandbox_evaluator.hpp"
#include "messages/kgym.pb.h"
#include "messages/caf_types.hpp"

namespace kgym {

using gpu_executor_actor = caf::typed_actor<caf::replies_to<ExecRequest>::with<ExecResult>>;

// Spawned detached: an evaluation blocks for seconds and must not hold a scheduler thread.
gpu_executor_actor spawn_gpu_executor(caf::actor_system& system, executor_options options);

// For measuring the control plane only: answers at once without running anything (OK,
// speedup 2, coverage 1), stamping harness_seconds["executor_start_unix"].
gpu_executor_actor spawn_null_executor(caf::actor_system& system);

}  // namespace kgym
