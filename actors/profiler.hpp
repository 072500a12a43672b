// profiler: rules on the CUPTI trace an evaluation left behind, while the executor's device
// evaluates the next candidate. A thin shell around gpu/executor/trace_ruling (the trace's
// integrity, the request windows and the profile are pure functions of gpu/profiler); the
// ruling parses megabytes of trace, so the actor is spawned detached.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

// Request: a result as the device left it and the candidate's trace; answer: the result
// ruled on (HACKED where the trace says so, its ProfileReport on the GPU).
using profiler_actor = caf::typed_actor<caf::replies_to<ExecResult, CandidateTrace>::with<ExecResult>>;

profiler_actor spawn_profiler(caf::actor_system& system);

}  // namespace kgym
