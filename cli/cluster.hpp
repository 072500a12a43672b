// What `kgym serve` and `kgym worker` share: the middleman's configuration (heartbeats, so a
// silent node is noticed) and HOST:PORT parsing.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include <stdexcept>
#include <string>
#include <utility>

#include "messages/caf_types.hpp"

namespace kgym::cli {

// A peer that sends nothing for connection_timeout (heartbeats every second keep healthy
// ones alive) is dropped, and the scheduler's monitors fire for its executors.
constexpr int heartbeat_ms = 1000;
constexpr int connection_timeout_ms = 5000;

inline void configure_cluster(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(heartbeat_ms)});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::milliseconds(connection_timeout_ms)});
  add_message_types(cfg);
}

inline std::pair<std::string, uint16_t> parse_host_port(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("expected HOST:PORT, got '" + text + "'");
  int port = std::stoi(text.substr(colon + 1));
  if (port < 0 || port > 65535)
    throw std::invalid_argument("port out of range in '" + text + "'");
  return {text.substr(0, colon), static_cast<uint16_t>(port)};
}

}  // namespace kgym::cli
