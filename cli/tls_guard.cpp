// CAF 0.17's TLS sessions call SSL_read, SSL_write, SSL_accept, SSL_connect and SSL_free
// from the middleman's thread. These definitions in the kgym binary take the place of libssl's
// for libcaf_openssl's calls (tls_guard.hpp says what each adds), then call libssl's own.
//
// Why this is safe to do from the outside: CAF reads a BASP connection in units of exactly
// one header (32 bytes) or one payload (receive_policy::exactly), so the bytes SSL_read
// returns never straddle two units and a header is whole before CAF acts on it; and a session
// is freed (SSL_free) before its socket is closed (the policy holding it is destroyed before
// the stream's event_handler base), so a socket found here under the lock is still the
// session's own when the deadline thread shuts it down.
#include "cli/tls_guard.hpp"

#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace kgym::cli {

namespace {

template <class Function>
Function libssl(const char* name) {
  static void* handle = ::dlopen("libssl.so.3", RTLD_NOW | RTLD_NOLOAD);
  return reinterpret_cast<Function>(::dlsym(handle ? handle : RTLD_NEXT, name));
}

using clock_type = std::chrono::steady_clock;
constexpr size_t basp_header_size = 32;      // caf::io::basp::header_size
constexpr uint8_t basp_client_handshake = 1;  // caf::io::basp::message_type::client_handshake
constexpr size_t node_id_bytes = 8 + 4 + 20;  // implementation atom, process id, host id

// Where one connection's BASP stream is: inside a header or a payload, and how much is left.
struct basp_stream {
  bool in_header = true;
  size_t left = basp_header_size;
  unsigned char header[basp_header_size] = {};
  size_t have = 0;
  bool capturing_node = false;  // the payload of a client handshake: the peer's node id
  std::string node_bytes;
};

struct guard_state {
  std::mutex mutex;
  std::map<SSL*, std::pair<int, clock_type::time_point>> handshakes;  // accepted, not yet done
  std::map<SSL*, basp_stream> streams;
  std::map<SSL*, std::string> accepted_names;    // the CN each accepted peer showed
  // Accepted peers past TLS whose BASP handshake has not come yet: socket, since when.
  std::map<SSL*, std::pair<int, clock_type::time_point>> silent;
  std::map<std::string, std::string> node_names;  // CAF node (to_string) -> CN
};

guard_state& state() {
  static guard_state s;
  return s;
}

double handshake_deadline_s() {
  const char* value = std::getenv("KGYM_TLS_HANDSHAKE_S");
  return value && std::atof(value) > 0 ? std::atof(value) : default_tls_handshake_deadline_s;
}

std::string common_name(X509* cert) {
  if (!cert)
    return "";
  char name[256] = {};
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
  return n > 0 ? std::string(name, static_cast<size_t>(n)) : "";
}

// Closes a connection from under CAF: its next read fails and it drops it. Caller holds the lock.
void refuse(SSL* ssl, int fd, const std::string& why) {
  spdlog::warn("worker port: closing a TLS connection{}: {}",
               state().accepted_names.count(ssl) ? " of " + state().accepted_names[ssl] : "", why);
  ::shutdown(fd, SHUT_RDWR);
}

// Shuts down the connections in `pending` older than `deadline`, saying `why`. Caller holds the lock.
void expire(std::map<SSL*, std::pair<int, clock_type::time_point>>& pending, std::chrono::duration<double> deadline,
            const std::string& why) {
  for (auto it = pending.begin(); it != pending.end();) {
    if (clock_type::now() - it->second.second > deadline) {
      refuse(it->first, it->second.first, why);
      it = pending.erase(it);
    } else {
      ++it;
    }
  }
}

// Shuts down accepted connections whose TLS handshake, or then their BASP handshake (a member
// that connects and says nothing), outlived the deadline.
void watch_handshakes() {
  const auto deadline = std::chrono::duration<double>(handshake_deadline_s());
  const std::string within = " within " + std::to_string(deadline.count()) + " s";
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::lock_guard<std::mutex> lock(state().mutex);
    expire(state().handshakes, deadline, "no TLS handshake" + within);
    expire(state().silent, deadline, "no BASP handshake" + within);
  }
}

std::string node_string(const std::string& bytes) {  // as caf::to_string(node_id): HOSTHEX#PID
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint32_t pid = (uint32_t{b[8]} << 24) | (uint32_t{b[9]} << 16) | (uint32_t{b[10]} << 8) | b[11];
  std::string text;
  char hex[3];
  for (size_t i = 12; i < node_id_bytes; ++i) {
    std::snprintf(hex, sizeof hex, "%02X", b[i]);
    text += hex;
  }
  return text + "#" + std::to_string(pid);
}

// Follows the BASP units in what SSL_read returned; false: the connection must go (why says).
bool follow_basp(SSL* ssl, const unsigned char* data, size_t size, std::string* why) {
  auto& st = state().streams[ssl];
  for (size_t i = 0; i < size;) {
    const size_t take = std::min(st.left, size - i);
    if (st.in_header)
      std::memcpy(st.header + st.have, data + i, take);
    else if (st.capturing_node)
      st.node_bytes.append(reinterpret_cast<const char*>(data + i), take);
    st.have += take;
    st.left -= take;
    i += take;
    if (st.left > 0)
      continue;
    if (st.in_header) {
      const uint32_t payload = (uint32_t{st.header[4]} << 24) | (uint32_t{st.header[5]} << 16) |
                               (uint32_t{st.header[6]} << 8) | st.header[7];
      if (payload > max_cluster_message_bytes) {
        *why = "a BASP header announced " + std::to_string(payload) + " bytes (at most " +
               std::to_string(max_cluster_message_bytes) + ")";
        return false;
      }
      st.capturing_node = st.header[0] == basp_client_handshake && payload == node_id_bytes &&
                          state().accepted_names.count(ssl);
      st.in_header = payload == 0;
      st.left = payload == 0 ? basp_header_size : payload;
    } else {
      if (st.capturing_node) {
        const std::string node = node_string(st.node_bytes);
        const std::string& name = state().accepted_names[ssl];
        auto known = state().node_names.find(node);
        if (known != state().node_names.end() && known->second != name) {
          *why = "it announced node " + node + ", which " + known->second + " holds";
          return false;
        }
        state().node_names[node] = name;
        state().silent.erase(ssl);
        st.capturing_node = false;
        st.node_bytes.clear();
      }
      st.in_header = true;
      st.left = basp_header_size;
    }
    st.have = 0;
  }
  return true;
}

}  // namespace

std::optional<std::string> tls_peer_name(const std::string& node) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto found = state().node_names.find(node);
  if (found == state().node_names.end())
    return std::nullopt;
  return found->second;
}

std::string certificate_name(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (!file)
    return "";
  X509* cert = PEM_read_X509(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  const std::string name = common_name(cert);
  X509_free(cert);
  return name;
}

}  // namespace kgym::cli

using namespace kgym::cli;

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static auto real = libssl<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  const int n = real(ssl, buf, num);
  if (n <= 0)
    return n;
  std::lock_guard<std::mutex> lock(state().mutex);
  // Only the worker port's connections (accepted by CAF) speak BASP: the process's other TLS
  // (the OpenAI backend's HTTPS, a worker's own connection to serve) is left alone.
  if (!state().accepted_names.count(ssl))
    return n;
  std::string why;
  if (!follow_basp(ssl, static_cast<const unsigned char*>(buf), static_cast<size_t>(n), &why)) {
    refuse(ssl, SSL_get_fd(ssl), why);
    return 0;  // SSL_ERROR_SYSCALL for CAF: the connection is dropped
  }
  return n;
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static auto real = libssl<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_accept(SSL* ssl) {
  static auto real = libssl<int (*)(SSL*)>("SSL_accept");
  static std::once_flag watcher;
  std::call_once(watcher, [] { std::thread(watch_handshakes).detach(); });
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    auto& pending = state().handshakes;
    if (!pending.count(ssl)) {
      if (pending.size() >= max_pending_handshakes) {
        refuse(ssl, SSL_get_fd(ssl), std::to_string(pending.size()) + " TLS handshakes are pending already");
        return 0;
      }
      pending[ssl] = {SSL_get_fd(ssl), clock_type::now()};
    }
  }
  ERR_clear_error();
  const int result = real(ssl);
  if (result == 1) {
    X509* cert = SSL_get1_peer_certificate(ssl);
    const std::string name = common_name(cert);
    X509_free(cert);
    std::lock_guard<std::mutex> lock(state().mutex);
    state().handshakes.erase(ssl);
    state().accepted_names[ssl] = name;
    state().silent[ssl] = {SSL_get_fd(ssl), clock_type::now()};
  }
  return result;
}

int SSL_connect(SSL* ssl) {
  static auto real = libssl<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

void SSL_free(SSL* ssl) {
  static auto real = libssl<void (*)(SSL*)>("SSL_free");
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    state().handshakes.erase(ssl);
    state().streams.erase(ssl);
    state().accepted_names.erase(ssl);
    state().silent.erase(ssl);
  }
  real(ssl);
}

}  // extern "C"
