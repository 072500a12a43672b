// worker_gate: what `kgym serve --listen` publishes to other nodes. A `kgym worker` joins its
// executors and takes them away through it, and nothing else: an ExecRequest sent to the
// worker port finds no handler, so only the API creates work. Every join is logged with the
// node it came from, and a node joins at most `max_executors_per_node` executors (names it
// already joined may join again: a worker's rejoin replaces them); joins beyond are refused
// and logged, so one node cannot fill the scheduler with slots. With `identity` (the worker
// port over TLS: the certificate name a node showed), an executor joins only under its node's
// certificate name ("NAME#..."), so the executor named in every result is authenticated.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <functional>
#include <optional>
#include <string>

#include "actors/scheduler.hpp"

namespace kgym {

using worker_gate_actor =
    caf::typed_actor<caf::reacts_to<join_atom, std::string, caf::strong_actor_ptr>,
                     caf::replies_to<leave_atom, caf::strong_actor_ptr>::with<caf::ok_atom>>;

constexpr int default_max_executors_per_node = 64;

// The authenticated name of a node, if it has one (empty function: names are not checked).
using node_identity = std::function<std::optional<std::string>(const caf::node_id&)>;

worker_gate_actor spawn_worker_gate(caf::actor_system& system, scheduler_actor scheduler,
                                    int max_executors_per_node = default_max_executors_per_node,
                                    node_identity identity = {});

}  // namespace kgym
