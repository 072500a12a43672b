// The HTTP client of the OpenAI backend, on cpp-httplib (Debian's libcpp-httplib, built with
// OpenSSL): http:// and https:// (the server's certificate is checked against the system's CA
// store, or the bundle in $SSL_CERT_FILE), one kept-alive connection per server and thread,
// and a deadline on the exchange: connecting, sending, and the answer (a server that keeps
// sending past it is cut off at its next piece; one that goes silent, when a read has waited
// as long as the whole deadline). Name resolution is the system's, before the deadline starts.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kgym {

struct http_url {
  std::string scheme = "http";  // "http" or "https"
  std::string host;
  int port = 80;
  std::string path;  // "/v1", no trailing slash
  std::string origin() const;  // "scheme://host:port"
};

// "http[s]://host[:port][/path]"; on failure returns nullopt and says why in `error`.
std::optional<http_url> parse_http_url(const std::string& url, std::string* error);

struct http_reply {
  int status = 0;       // 0: no answer; `error` says why
  std::string body;
  std::string error;
  bool timed_out = false;
};

// What went wrong, for a message: the error without an answer, else "HTTP <status>: <body start>".
std::string describe_failure(const http_reply& reply);

using http_headers = std::vector<std::pair<std::string, std::string>>;

// POSTs a JSON body to base.path + path and waits at most timeout_s for the whole answer.
http_reply http_post_json(const http_url& base, const std::string& path, const std::string& body,
                          const http_headers& headers, double timeout_s);

// GETs base.path + path, waiting at most timeout_s.
http_reply http_get(const http_url& base, const std::string& path, const http_headers& headers, double timeout_s);

}  // namespace kgym
