#include "actors/profiler.hpp"

#include <caf/all.hpp>

#include "gpu/profiler/trace_check.hpp"

namespace kgym {

namespace {

profiler_actor::behavior_type profiler_impl(profiler_actor::pointer) {
  return {
      [](const std::string& trace_path, const std::string& key_hex) -> ProfileReport {
        return profile_of(read_checked_trace(trace_path, key_hex));
      },
  };
}

}  // namespace

profiler_actor spawn_profiler(caf::actor_system& system) { return system.spawn<caf::detached>(profiler_impl); }

}  // namespace kgym
