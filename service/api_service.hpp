// Spawning the API service actor (its messages: actors/api_service.hpp) with what it needs.
#pragma once

#include <caf/actor_system.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "actors/api_service.hpp"
#include "service/api_outbox.hpp"
#include "service/request_journal.hpp"
#include "service/request_table.hpp"

namespace kgym {

struct api_service_config {
  scheduler_actor scheduler;
  const std::map<std::string, Task>* suite = nullptr;  // what task_id names (outlives the actor)
  std::string secret;               // EvalRequest.secret (or the HTTP bearer) must match; empty: none
  Device device = CPU;
  bool cpu_sizes = true;            // on the CPU, run tasks at their task.json cpu_sizes
  EvalOptions default_options;      // serve --option: what a request's own options leave unset
  // --state-dir: read when the actor starts (a restart: answers kept, unfinished requests
  // evaluated again), then written by the actor's journal writer (a thread of its own).
  request_journal* journal = nullptr;
  request_table::limits table_limits;
  std::chrono::milliseconds tick{100};  // redeliveries, long polls, the counts for the page
  std::chrono::duration<double> drain_timeout{120};  // said to the clients told to send again
  // For the page for people (--web): the counts each tick, and each answer.
  std::function<void(const ServeStatus&)> on_counts;
  std::function<void(const EvalResult&)> on_answer;
  std::shared_ptr<api_outbox> outbox;  // what clients are sent, for the serve loop
};

api_service_actor spawn_api_service(caf::actor_system& system, api_service_config config);

}  // namespace kgym
