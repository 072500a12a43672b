// gpu_executor: one device, one evaluation at a time. It supervises the sandbox and always
// answers an ExecRequest with an ExecResult, whatever the candidate does. A candidate with
// CUDA extensions (load_inline) goes first to one of the executor's extension compilers
// (actors/extension_compiler.hpp), on CPU cores, while the device evaluates others; the
// scheduler sends such requests ahead.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/extension_compiler.hpp"
#include "gpu/executor/sandbox_evaluator.hpp"
#include "messages/kgym.pb.h"
#include "messages/caf_types.hpp"

namespace kgym {

using cancel_atom = caf::atom_constant<caf::atom("cancel")>;

// Evaluates; and, told that its client withdrew a request it holds (by request id), stops it
// (the answer is then CANCELLED) or never starts it.
using gpu_executor_actor =
    caf::typed_actor<caf::replies_to<ExecRequest>::with<ExecResult>, caf::reacts_to<cancel_atom, std::string>>;

// The executor's worker (detached, blocking in its own thread): the device's one evaluation
// at a time, given what was built for the candidate, answered as the device left it with the
// candidate's trace (the executor's profiler rules on it while the device moves on:
// actors/profiler.hpp).
using evaluation_worker_actor =
    caf::typed_actor<caf::replies_to<ExecRequest, SandboxEvent::Built>::with<ExecResult, CandidateTrace>>;

gpu_executor_actor spawn_gpu_executor(caf::actor_system& system, executor_options options);

// For measuring the control plane only: answers at once without running anything (OK,
// speedup 2, coverage 1), stamping harness_seconds["executor_start_unix"].
gpu_executor_actor spawn_null_executor(caf::actor_system& system);

}  // namespace kgym
