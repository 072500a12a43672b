#include "actors/profiler.hpp"

#include <caf/all.hpp>

#include "gpu/profiler/trace_profile.hpp"

namespace kgym {

namespace {

profiler_actor::behavior_type profiler_impl(profiler_actor::pointer) {
  return {
      [](const std::string& trace_path) -> ProfileReport {
        int bad_lines = 0;
        return profile_from_trace(read_trace(trace_path, &bad_lines));
      },
  };
}

}  // namespace

profiler_actor spawn_profiler(caf::actor_system& system) { return system.spawn<caf::detached>(profiler_impl); }

}  // namespace kgym
