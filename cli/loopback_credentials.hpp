// Cluster credentials made on the spot for a cluster on one machine's loopback, so the worker
// port there is TLS with the guard (cli/tls_guard.hpp: handshake deadlines, message size
// bounds) like any other, and only processes of the same user can join: a CA of the user's own
// in a private directory (0700, owned by the user: $XDG_RUNTIME_DIR/kgym-cluster, else
// $TMPDIR/kgym-cluster-UID), made by the first `kgym serve --listen` on loopback; each node
// (serve, each worker under its name) gets a certificate of its own signed by it. Whoever can
// read that directory can join, which on loopback is who could run kgym as that user anyway.
#pragma once

#include <filesystem>
#include <string>

#include "cli/cluster.hpp"

namespace kgym::cli {

// The directory holding the loopback CA (ca.pem, ca.key) and nodes/NAME/{ca.pem,node.pem,node.key}.
std::filesystem::path loopback_credentials_root();

// This node's loopback credentials under `node_name` (made now, signed by the loopback CA). The
// CA is made when missing if `make_ca` (serve); otherwise (a worker) its absence is an error
// that says to start kgym serve first or pass --cluster-certs. Throws on a root directory that
// is not private to this user.
cluster_credentials loopback_credentials(const std::string& node_name, bool make_ca);

}  // namespace kgym::cli
