#include "actors/worker_gate.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <map>
#include <set>

namespace kgym {

namespace {

struct worker_gate_state {
  std::map<caf::node_id, std::set<std::string>> names;  // the executor names each node joined
};

// Why `name` may not join from a node whose certificate says `certified` ("" if it may).
std::string misnamed(const std::string& name, const std::optional<std::string>& certified) {
  if (!certified)
    return "its node showed no certificate name";
  if (name.substr(0, name.find('#')) != *certified)
    return "its node's certificate says " + *certified + " (start the worker with --name " + *certified + ")";
  return "";
}

worker_gate_actor::behavior_type worker_gate(worker_gate_actor::stateful_pointer<worker_gate_state> self,
                                             scheduler_actor scheduler, int max_executors_per_node,
                                             node_identity identity) {
  self->link_to(scheduler);  // the gate is part of the control plane: they stop together
  return {
      [self, scheduler, max_executors_per_node, identity](join_atom, const std::string& name,
                                                          const caf::strong_actor_ptr& executor) {
        const auto sender = self->current_sender();
        const caf::node_id node = sender ? sender->node() : caf::node_id{};
        const std::string where = sender ? to_string(node) : std::string("unknown");
        if (identity) {
          const std::string why = misnamed(name, identity(node));
          if (!why.empty()) {
            spdlog::warn("worker gate: refused executor {} from node {}: {}", name, where, why);
            return;
          }
        }
        auto& names = self->state.names[node];
        if (!names.count(name) && static_cast<int>(names.size()) >= max_executors_per_node) {
          spdlog::warn("worker gate: refused executor {} from node {}: that node already joined {} executors "
                       "(--max-executors-per-worker)",
                       name, where, names.size());
          return;
        }
        names.insert(name);
        spdlog::info("worker gate: executor {} joins from node {}", name, where);
        self->send(scheduler, join_atom::value, name, executor);
      },
      [self, scheduler](leave_atom, const caf::strong_actor_ptr& executor) {
        return self->delegate(scheduler, leave_atom::value, executor);
      },
  };
}

}  // namespace

worker_gate_actor spawn_worker_gate(caf::actor_system& system, scheduler_actor scheduler,
                                    int max_executors_per_node, node_identity identity) {
  return system.spawn(worker_gate, std::move(scheduler), max_executors_per_node, std::move(identity));
}

}  // namespace kgym
