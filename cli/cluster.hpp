// What `kgym serve` and `kgym worker` share: the middleman's configuration (heartbeats, so a
// silent node is noticed; TLS with the cluster's certificates), HOST:PORT parsing, and
// publishing / reaching the worker gate over either.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/openssl/remote_actor.hpp>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>

#include "messages/caf_types.hpp"
#include "service/eval_api.hpp"
#include "pipeline/actor_system_setup.hpp"

namespace kgym::cli {

// A peer that sends nothing for connection_timeout (heartbeats every second keep healthy
// ones alive) is dropped, and the scheduler's monitors fire for its executors.
constexpr int heartbeat_ms = 1000;
constexpr int connection_timeout_ms = 5000;

// Where a node's cluster credentials are when neither --cluster-certs nor this names them.
constexpr const char* cluster_certs_env = "KGYM_CLUSTER_CERTS";

// A node's credentials (deploy/cluster_certs.sh makes them): the cluster's CA certificate,
// and this node's certificate and key, signed by that CA. With them every connection between
// serve and its workers is TLS, and both ends must show a certificate of the cluster's CA.
struct cluster_credentials {
  std::string dir;  // empty: none (plain middleman, loopback only)
  bool enabled() const { return !dir.empty(); }
};

// --cluster-certs DIR, else $KGYM_CLUSTER_CERTS; the files must be there.
inline cluster_credentials find_cluster_credentials(const std::string& flag_value) {
  cluster_credentials c;
  c.dir = flag_value;
  if (c.dir.empty())
    if (const char* env = std::getenv(cluster_certs_env))
      c.dir = env;
  if (!c.enabled())
    return c;
  for (const char* file : {"ca.pem", "node.pem", "node.key"})
    if (!std::filesystem::exists(std::filesystem::path(c.dir) / file))
      throw std::invalid_argument("cluster credentials: " + (std::filesystem::path(c.dir) / file).string() +
                                  " is missing (make them with deploy/cluster_certs.sh DIR NODE...)");
  return c;
}

inline void configure_cluster(caf::actor_system_config& cfg, const cluster_credentials& credentials = {}) {
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(heartbeat_ms)});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::milliseconds(connection_timeout_ms)});
  if (credentials.enabled()) {
    const std::filesystem::path dir(credentials.dir);
    cfg.openssl_cafile = (dir / "ca.pem").string();
    cfg.openssl_certificate = (dir / "node.pem").string();
    cfg.openssl_key = (dir / "node.key").string();
    cfg.load<caf::openssl::manager>();
  }
  configure_actor_system(cfg);
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

// Workers beyond loopback only with cluster credentials.
inline void require_credentials_beyond_loopback(const std::string& host, const cluster_credentials& credentials) {
  if (!credentials.enabled() && !is_loopback_host(host))
    throw std::invalid_argument("refusing to accept workers on " + host + " without cluster credentials: anyone who "
                                "reaches the port could join and forge verdicts. Make them with "
                                "deploy/cluster_certs.sh DIR serve NODE..., then pass --cluster-certs DIR/serve (or "
                                "set $KGYM_CLUSTER_CERTS)");
}

// Publishes `whom` on host:port: over TLS with credentials, else plain (loopback only).
template <class Handle>
caf::expected<uint16_t> publish_to_workers(caf::actor_system& system, const Handle& whom, const std::string& host,
                                           uint16_t port, const cluster_credentials& credentials) {
  require_credentials_beyond_loopback(host, credentials);
  if (credentials.enabled())
    return caf::openssl::publish(whom, port, host.c_str(), true);
  return system.middleman().publish(whom, port, host.c_str(), true);
}

template <class Handle>
caf::expected<Handle> reach_control_plane(caf::actor_system& system, const std::string& host, uint16_t port,
                                          const cluster_credentials& credentials) {
  if (credentials.enabled())
    return caf::openssl::remote_actor<Handle>(system, host, port);
  return system.middleman().remote_actor<Handle>(host, port);
}

}  // namespace kgym::cli
