// tls_guard: what kgym adds around CAF 0.17's TLS sessions (libcaf_openssl) on the worker port,
// by defining, in the kgym binary, the libssl functions libcaf_openssl calls (cli/tls_guard.cpp):
// - each call first empties OpenSSL's per-thread error queue (CAF does not, and one refused
//   handshake then dropped every joined worker);
// - an accepted connection must finish its TLS handshake within a deadline, then its BASP
//   handshake within as long again (a member that connects and says nothing is closed), and
//   at most max_pending_handshakes TLS handshakes may be pending at once: beyond, a new one is
//   closed at once;
// - no BASP message may announce more than max_cluster_message_bytes: the connection is closed
//   when such a header arrives, before CAF allocates its payload;
// - the certificate name (CN) of each accepted peer is remembered with the CAF node it
//   announced in its BASP handshake, so the worker gate can hold a worker to its name.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kgym::cli {

constexpr double default_tls_handshake_deadline_s = 10.0;  // $KGYM_TLS_HANDSHAKE_S overrides
constexpr size_t max_pending_handshakes = 64;
constexpr size_t max_cluster_message_bytes = size_t{64} << 20;  // the API's requests are at most 4 MiB

// The CN of the certificate shown by the TLS peer that announced `node` (CAF's to_string of its
// node_id) on an accepted connection; nothing when no such peer is known.
std::optional<std::string> tls_peer_name(const std::string& node);

// The CN of the certificate in the PEM file `path` (a node's own, DIR/node.pem); empty if unreadable.
std::string certificate_name(const std::string& path);

}  // namespace kgym::cli
