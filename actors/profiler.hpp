// profiler: turns the CUPTI trace an evaluation left behind into a ProfileReport.
// A thin shell around gpu/profiler/trace_check and trace_profile (pure functions); reading a
// trace file blocks, so the actor is spawned detached.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>

#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

// Request: the path of a trace file and its key (hex). Only the lines authenticated under
// that key count; the report says how many were rejected and whether the trace ended.
using profiler_actor = caf::typed_actor<caf::replies_to<std::string, std::string>::with<ProfileReport>>;

profiler_actor spawn_profiler(caf::actor_system& system);

}  // namespace kgym
