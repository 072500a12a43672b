// monitor: live inspection of a run. Episodes report each stage; the learner's iterations
// arrive too; `kgym top` (another process, over CAF's middleman on loopback) asks for a view.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using monitor_actor = caf::typed_actor<caf::reacts_to<EpisodeStatus>, caf::reacts_to<IterationMetrics>,
                                       caf::replies_to<caf::get_atom>::with<MonitorView>>;

// Keeps every running episode and the `keep_recent` latest finished ones.
monitor_actor spawn_monitor(caf::actor_system& system, std::string run_dir, size_t keep_recent = 50);

// The monitor's view, asked from any thread (nullopt: no answer within `timeout`).
std::optional<MonitorView> ask_view(caf::actor_system& system, const monitor_actor& monitor,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(2));

}  // namespace kgym
