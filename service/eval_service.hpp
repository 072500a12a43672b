// eval_service: the evaluation API of `kgym serve`, the loop that owns its sockets. One thread
// reads the ZeroMQ ROUTER socket and the HTTP front's calls and hands each to the API service
// actor (actors/api_service.hpp, service/api_service.cpp), which decides everything (checks,
// the request table, the journal, the scheduler, draining), and sends what the actor leaves in
// its outbox. cli/serve.cpp parses the command line, binds the ports, starts the actor system,
// the executors and the scheduler, and hands them here.
#pragma once

#include <caf/actor_system.hpp>
#include <zmq.hpp>

#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <string>

#include "messages/kgym.pb.h"
#include "service/api_service.hpp"
#include "service/http_front.hpp"

namespace kgym {

struct eval_service_setup {
  zmq::socket_t* socket = nullptr;  // the bound ROUTER socket (only the service's thread touches it)
  http_front* http = nullptr;       // the HTTP/JSON front, if served
  size_t max_request_bytes = 4 << 20;
  api_service_config service;       // the API service actor's (its outbox is the loop's)
};

// Serves until `stop` is set and the requests in flight are answered (or service.drain_timeout
// passed: their clients are told to send them again). Returns the number of answers sent.
size_t run_eval_service(caf::actor_system& system, const eval_service_setup& setup,
                        const volatile std::sig_atomic_t& stop);

}  // namespace kgym
