#include "policy/http_client.hpp"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <memory>

namespace kgym {

std::string http_url::origin() const { return scheme + "://" + host + ":" + std::to_string(port); }

std::optional<http_url> parse_http_url(const std::string& url, std::string* error) {
  http_url out;
  const size_t scheme_end = url.find("://");
  out.scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (out.scheme != "http" && out.scheme != "https") {
    *error = "'" + url + "' is not an http:// or https:// URL (expected e.g. http://127.0.0.1:8000/v1)";
    return std::nullopt;
  }
  out.port = out.scheme == "https" ? 443 : 80;
  std::string rest = url.substr(scheme_end + 3);
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
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

std::string describe_failure(const http_reply& reply) {
  if (reply.status == 0)
    return reply.error;
  return "HTTP " + std::to_string(reply.status) + ": " + reply.body.substr(0, 300);
}

namespace {

using clock_type = std::chrono::steady_clock;

// One client per server and thread: its connection is kept alive between requests (the
// actors that call this run on CAF's threads, each exchange on one of them).
httplib::Client& client_for(const http_url& base) {
  thread_local std::map<std::string, std::unique_ptr<httplib::Client>> clients;
  auto& client = clients[base.origin()];
  if (!client) {
    client = std::make_unique<httplib::Client>(base.origin());
    client->set_keep_alive(true);
  }
  return *client;
}

http_reply exchange(httplib::Request request, const http_url& base, const http_headers& headers, double timeout_s) {
  httplib::Client& client = client_for(base);
  const auto seconds = std::chrono::duration<double>(std::max(timeout_s, 0.001));
  const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(seconds);
  client.set_connection_timeout(whole);
  client.set_read_timeout(whole);
  client.set_write_timeout(whole);
  const auto deadline = clock_type::now() + whole;
  bool late = false;
  std::string body;
  // Called as each piece of the body arrives (chunked or not): a server that drips its answer
  // is cut off at the deadline; one that goes silent, by the read timeout.
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    if ((late = clock_type::now() > deadline))
      return false;
    body.append(data, size);
    return true;
  };
  request.headers.emplace("Accept", "application/json");
  for (const auto& [name, value] : headers)
    request.headers.emplace(name, value);
  httplib::Result result = client.send(request);
  http_reply reply;
  late = late || clock_type::now() > deadline;
  if (!result) {
    const httplib::Error error = result.error();
    reply.timed_out = late || error == httplib::Error::ConnectionTimeout || error == httplib::Error::Canceled;
    reply.error = reply.timed_out ? "no complete answer within " + std::to_string(timeout_s) + " s"
                                  : "the exchange with " + base.origin() + " failed: " + httplib::to_string(error);
    if (error == httplib::Error::SSLServerVerification)
      reply.error += " (its certificate is not trusted here: set SSL_CERT_FILE to the CA bundle that signed it)";
    return reply;
  }
  reply.status = result->status;
  reply.body = std::move(body);
  return reply;
}

}  // namespace

http_reply http_post_json(const http_url& base, const std::string& path, const std::string& body,
                          const http_headers& headers, double timeout_s) {
  httplib::Request request;
  request.method = "POST";
  request.path = base.path + path;
  request.body = body;
  request.headers.emplace("Content-Type", "application/json");
  return exchange(std::move(request), base, headers, timeout_s);
}

http_reply http_get(const http_url& base, const std::string& path, const http_headers& headers, double timeout_s) {
  httplib::Request request;
  request.method = "GET";
  request.path = base.path + path;
  return exchange(std::move(request), base, headers, timeout_s);
}

}  // namespace kgym
