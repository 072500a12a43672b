#include "web/http_guard.hpp"

#include <algorithm>
#include <stdexcept>

#include "messages/json.hpp"
#include "messages/kgym.pb.h"
#include "service/eval_api.hpp"
#include "web/page_assets.hpp"

namespace kgym::web {

namespace {

// No inline script or style, nothing from elsewhere: an untrusted program shown on the page
// cannot run, even where the page's own code would slip.
constexpr const char* content_security_policy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
constexpr const char* key_cookie = "kgym_web_key";

std::string cookie_value(const httplib::Request& req, const std::string& name) {
  std::string cookies = req.get_header_value("Cookie");
  size_t at = 0;
  while (at < cookies.size()) {
    size_t end = cookies.find(';', at);
    std::string part = cookies.substr(at, end == std::string::npos ? std::string::npos : end - at);
    size_t first = part.find_first_not_of(' ');
    part = first == std::string::npos ? "" : part.substr(first);
    if (part.compare(0, name.size() + 1, name + "=") == 0)
      return part.substr(name.size() + 1);
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return "";
}

}  // namespace

void secure_defaults(httplib::Server& server) {
  server.set_payload_max_length(1 << 16);  // read-only: no request carries a body worth the name
  server.set_default_headers({{"Content-Security-Policy", content_security_policy},
                              {"X-Content-Type-Options", "nosniff"},
                              {"Referrer-Policy", "no-referrer"},
                              {"X-Frame-Options", "DENY"}});
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty())
      send_error(res, res.status, res.status == 404 ? "no such page: see / for the view and /api/... for its data"
                                                    : "the request was refused (" + std::to_string(res.status) + ")");
  });
}

void send_json(httplib::Response& res, const google::protobuf::Message& message) {
  res.set_header("Cache-Control", "no-store");
  res.set_content(to_json(message), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& text) {
  WebError error;
  error.set_error(text);
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(to_json(error), "application/json");
}

bool authorized(const std::string& secret, const httplib::Request& req, httplib::Response& res) {
  if (secret.empty())
    return true;
  std::string bearer = req.get_header_value("Authorization");
  if (bearer.rfind("Bearer ", 0) == 0 && secrets_equal(bearer.substr(7), secret))
    return true;
  if (secrets_equal(cookie_value(req, key_cookie), secret))
    return true;
  if (req.has_param("key") && secrets_equal(req.get_param_value("key"), secret)) {
    // Once, from the link the user was given; the browser then carries it as a cookie that
    // scripts cannot read and other sites cannot send.
    res.set_header("Set-Cookie", std::string(key_cookie) + "=" + secret + "; HttpOnly; SameSite=Strict; Path=/");
    return true;
  }
  send_error(res, 401, "this view requires its secret: open it with ?key=<secret> once, or send "
                       "Authorization: Bearer <secret>");
  return false;
}

void serve_pages(httplib::Server& server, const std::string& secret, const std::vector<std::string>& paths,
                 const std::string& home) {
  for (const auto& asset : page_assets()) {
    if (std::find(paths.begin(), paths.end(), asset.path) == paths.end())
      continue;
    auto serve = guarded(secret, [&asset](const httplib::Request&, httplib::Response& res) {
      res.set_content(asset.body, asset.content_type.c_str());
    });
    server.Get(asset.path, serve);
    if (asset.path == home)
      server.Get("/", serve);
  }
}

void require_secret_beyond_loopback(const std::string& host, const std::string& secret, const std::string& what) {
  if (!is_loopback_host(host) && secret.empty())
    throw std::invalid_argument("refusing to serve " + what + " on " + host +
                                " without a secret: set KGYM_WEB_SECRET (or the variable --web-secret-env names), "
                                "or listen on 127.0.0.1");
}

int bind_or_throw(httplib::Server& server, const std::string& host, int port, const std::string& what) {
  int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0)
    throw std::runtime_error("cannot serve " + what + " on " + host + ":" + std::to_string(port) +
                             " (is the port taken, or the address not this machine's?)");
  return bound;
}

}  // namespace kgym::web
