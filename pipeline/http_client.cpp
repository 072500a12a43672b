#include "pipeline/http_client.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace kgym {

std::optional<http_url> parse_http_url(const std::string& url, std::string* error) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    *error = "'" + url + "': https is not supported; use the server's plain http:// address (or a TLS proxy)";
    return std::nullopt;
  }
  if (url.rfind(scheme, 0) != 0) {
    *error = "'" + url + "' is not an http:// URL (expected e.g. http://127.0.0.1:8000/v1)";
    return std::nullopt;
  }
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  http_url out;
  out.path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!out.path.empty() && out.path.back() == '/')
    out.path.pop_back();
  size_t colon = authority.rfind(':');
  out.host = authority.substr(0, colon);
  if (colon != std::string::npos) {
    std::string port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
        std::stoi(port) > 65535) {
      *error = "'" + url + "': bad port '" + port + "'";
      return std::nullopt;
    }
    out.port = std::stoi(port);
  }
  if (out.host.empty()) {
    *error = "'" + url + "' names no host";
    return std::nullopt;
  }
  return out;
}

namespace {

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The body of a chunked message starting at `at`; nullopt while incomplete.
std::optional<std::string> dechunk(const std::string& bytes, size_t at, std::string* error) {
  std::string body;
  while (true) {
    size_t line_end = bytes.find("\r\n", at);
    if (line_end == std::string::npos)
      return std::nullopt;
    size_t size = 0;
    try {
      size = std::stoul(bytes.substr(at, line_end - at), nullptr, 16);
    } catch (...) {
      *error = "bad chunk size in the server's answer";
      return std::string{};
    }
    at = line_end + 2;
    if (size == 0)
      return body;
    if (bytes.size() < at + size + 2)
      return std::nullopt;
    body.append(bytes, at, size);
    at += size + 2;
  }
}

}  // namespace

std::string describe_failure(const http_reply& reply) {
  return reply.status == 0 ? reply.error : "HTTP " + std::to_string(reply.status) + ": " + reply.body.substr(0, 300);
}

std::optional<http_reply> parse_http_response(const std::string& bytes, bool closed) {
  size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    if (!closed)
      return std::nullopt;
    http_reply r;
    r.error = bytes.empty() ? "the server closed the connection without answering"
                            : "the server's answer ended inside its headers";
    return r;
  }
  http_reply r;
  std::string head = bytes.substr(0, head_end);
  if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) {
    r.error = "the server did not answer with HTTP/1.x";
    return r;
  }
  r.status = std::atoi(head.c_str() + 9);
  std::optional<size_t> length;
  bool chunked = false;
  size_t line = head.find("\r\n");
  while (line != std::string::npos && line < head.size()) {
    size_t next = head.find("\r\n", line + 2);
    std::string header = head.substr(line + 2, (next == std::string::npos ? head.size() : next) - line - 2);
    size_t colon = header.find(':');
    if (colon != std::string::npos) {
      std::string name = lower(header.substr(0, colon));
      std::string value = header.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      if (name == "content-length")
        length = std::strtoul(value.c_str(), nullptr, 10);
      if (name == "transfer-encoding" && lower(value).find("chunked") != std::string::npos)
        chunked = true;
    }
    line = next;
  }
  size_t body_at = head_end + 4;
  if (chunked) {
    auto body = dechunk(bytes, body_at, &r.error);
    if (!body)
      return closed ? std::optional<http_reply>(http_reply{0, "", "the server's chunked answer was cut off"})
                    : std::nullopt;
    r.body = *body;
    if (!r.error.empty())
      r.status = 0;
    return r;
  }
  if (length) {
    if (bytes.size() < body_at + *length) {
      if (!closed)
        return std::nullopt;
      return http_reply{0, "", "the server's answer was cut off (" + std::to_string(bytes.size() - body_at) + " of " +
                                   std::to_string(*length) + " bytes)"};
    }
    r.body = bytes.substr(body_at, *length);
    return r;
  }
  if (!closed)
    return std::nullopt;
  r.body = bytes.substr(body_at);
  return r;
}

namespace {

using clock_type = std::chrono::steady_clock;

int remaining_ms(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Connects with the deadline; -1 with `error` set on failure.
int connect_to(const http_url& url, clock_type::time_point deadline, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found);
  if (rc != 0) {
    *error = "cannot resolve '" + url.host + "': " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
      break;
    if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int soerr = 0;
      socklen_t len = sizeof soerr;
      if (poll(&p, 1, remaining_ms(deadline)) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 &&
          soerr == 0)
        break;
      *error = soerr ? std::string(std::strerror(soerr)) : "timed out";
    } else {
      *error = std::strerror(errno);
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0)
    *error = "cannot connect to " + url.host + ":" + std::to_string(url.port) + ": " + *error;
  return fd;
}

}  // namespace

namespace {

http_reply exchange(const std::string& method, const http_url& base, const std::string& path,
                    const std::string* body, const http_headers& headers, double timeout_s) {
  auto deadline = clock_type::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  http_reply failed;
  int fd = connect_to(base, deadline, &failed.error);
  if (fd < 0) {
    failed.timed_out = remaining_ms(deadline) == 0;
    return failed;
  }
  std::string request = method + " " + base.path + path + " HTTP/1.1\r\nHost: " + base.host + ":" +
                        std::to_string(base.port) + "\r\nAccept: application/json\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers)
    request += name + ": " + value + "\r\n";
  if (body)
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body->size()) + "\r\n\r\n" + *body;
  else
    request += "\r\n";

  size_t sent = 0;
  std::string received;
  bool closed = false;
  while (true) {
    int wait = remaining_ms(deadline);
    if (wait == 0) {
      close(fd);
      failed.timed_out = true;
      failed.error = "no complete answer within " + std::to_string(timeout_s) + " s";
      return failed;
    }
    pollfd p{fd, static_cast<short>(sent < request.size() ? POLLOUT | POLLIN : POLLIN), 0};
    if (poll(&p, 1, wait) <= 0)
      continue;
    if (sent < request.size() && (p.revents & POLLOUT)) {
      ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n > 0)
        sent += static_cast<size_t>(n);
      else if (errno != EAGAIN && errno != EINTR) {
        failed.error = std::string("sending the request failed: ") + std::strerror(errno);
        close(fd);
        return failed;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buffer[65536];
      ssize_t n = recv(fd, buffer, sizeof buffer, 0);
      if (n > 0)
        received.append(buffer, static_cast<size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        closed = true;
      if (auto reply = parse_http_response(received, closed)) {
        close(fd);
        return *reply;
      }
    }
  }
}

}  // namespace

http_reply http_post_json(const http_url& base, const std::string& path, const std::string& body,
                          const http_headers& headers, double timeout_s) {
  return exchange("POST", base, path, &body, headers, timeout_s);
}

http_reply http_get(const http_url& base, const std::string& path, const http_headers& headers, double timeout_s) {
  return exchange("GET", base, path, nullptr, headers, timeout_s);
}

}  // namespace kgym
