// What every page kgym serves to a browser shares (web_server, serve_view): the security
// headers (a Content-Security-Policy with no inline script: the pages show untrusted text),
// JSON answers and errors, and the secret required beyond loopback.
#pragma once

#include <google/protobuf/message.h>
#include <httplib.h>

#include <string>
#include <vector>

namespace kgym::web {

// The headers every answer carries; the not-found handler.
void secure_defaults(httplib::Server& server);

void send_json(httplib::Response& res, const google::protobuf::Message& message);
void send_error(httplib::Response& res, int status, const std::string& text);

// Whether the call may see the page: always without a secret; with one, by
// "Authorization: Bearer", by the cookie, or by ?key= (which then sets the cookie). Otherwise
// answers 401 itself.
bool authorized(const std::string& secret, const httplib::Request& req, httplib::Response& res);

// `handler`, answered only where `authorized`.
template <class Handler>
httplib::Server::Handler guarded(const std::string& secret, Handler handler) {
  return [secret, handler](const httplib::Request& req, httplib::Response& res) {
    if (authorized(secret, req, res))
      handler(req, res);
  };
}

// Serves the page's own files named in `paths` (web/page_assets), `home` also at "/".
void serve_pages(httplib::Server& server, const std::string& secret, const std::vector<std::string>& paths,
                 const std::string& home);

// Throws std::invalid_argument for a host beyond loopback without a secret (`what`: the page).
void require_secret_beyond_loopback(const std::string& host, const std::string& secret, const std::string& what);

// Binds host:port (0: any free port) and returns the port; throws std::runtime_error naming
// the address when it cannot.
int bind_or_throw(httplib::Server& server, const std::string& host, int port, const std::string& what);

}  // namespace kgym::web
