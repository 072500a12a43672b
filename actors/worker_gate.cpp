#include "actors/worker_gate.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace kgym {

namespace {

worker_gate_actor::behavior_type worker_gate(worker_gate_actor::pointer self, scheduler_actor scheduler) {
  self->link_to(scheduler);  // the gate is part of the control plane: they stop together
  return {
      [self, scheduler](join_atom, const std::string& name, const caf::strong_actor_ptr& executor) {
        const auto sender = self->current_sender();
        spdlog::info("worker gate: executor {} joins from node {}", name,
                     sender ? to_string(sender->node()) : std::string("unknown"));
        self->send(scheduler, join_atom::value, name, executor);
      },
      [self, scheduler](leave_atom, const caf::strong_actor_ptr& executor) {
        return self->delegate(scheduler, leave_atom::value, executor);
      },
  };
}

}  // namespace

worker_gate_actor spawn_worker_gate(caf::actor_system& system, scheduler_actor scheduler) {
  return system.spawn(worker_gate, std::move(scheduler));
}

}  // namespace kgym
