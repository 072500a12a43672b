#include "actors/profiler.hpp"

#include <caf/all.hpp>

#include "gpu/executor/trace_ruling.hpp"

namespace kgym {

namespace {

profiler_actor::behavior_type profiler_impl(profiler_actor::pointer) {
  return {
      [](ExecResult& result, const CandidateTrace& trace) -> ExecResult {
        return rule_on_trace(std::move(result), trace);
      },
  };
}

}  // namespace

profiler_actor spawn_profiler(caf::actor_system& system) { return system.spawn<caf::detached>(profiler_impl); }

}  // namespace kgym
