// How every kgym process sets up its CAF actor system, stated once.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

#include "messages/caf_types.hpp"

namespace kgym {

// kgym's message types, and CAF's work-sharing scheduler: idle scheduler threads wait on a
// condition. CAF's default, work stealing, polls other threads' queues and sleeps 50 us at a
// time, in every thread of every kgym process; on a small machine those wake-ups took cores
// from the messages and from the sandboxes' evaluations (bench/dispatch_bench.py --tls on 2
// cores: p50 0.51 -> 0.29 ms; bench/control_plane_bench: 10,000 concurrent episodes 8-18%
// faster, one episode at a time 15% slower, a latency kgym's workloads never depend on).
inline void configure_actor_system(caf::actor_system_config& cfg) {
  add_message_types(cfg);
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

}  // namespace kgym
