// Just enough of an HTTP/1.1 client for OpenAI-compatible servers: one POST per connection,
// a deadline on the whole exchange, Content-Length or chunked bodies. Plain HTTP only
// (inference servers of a training cluster listen on the cluster's network; put a TLS proxy
// in front of anything else).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kgym {

struct http_url {
  std::string host;
  int port = 80;
  std::string path;  // "/v1", no trailing slash
};

// "http://host[:port][/path]"; on failure returns nullopt and says why in `error`.
std::optional<http_url> parse_http_url(const std::string& url, std::string* error);

struct http_reply {
  int status = 0;       // 0: no answer; `error` says why
  std::string body;
  std::string error;
  bool timed_out = false;
};

// Parses a whole response from the bytes read so far; nullopt while more are needed.
// `closed`: the peer closed the connection (ends a body without a length).
std::optional<http_reply> parse_http_response(const std::string& bytes, bool closed);

// What went wrong, for a message: the error without an answer, else "HTTP <status>: <body start>".
std::string describe_failure(const http_reply& reply);

using http_headers = std::vector<std::pair<std::string, std::string>>;

// POSTs a JSON body to base.path + path and waits at most timeout_s for the whole answer.
http_reply http_post_json(const http_url& base, const std::string& path, const std::string& body,
                          const http_headers& headers, double timeout_s);

// GETs base.path + path, waiting at most timeout_s.
http_reply http_get(const http_url& base, const std::string& path, const http_headers& headers, double timeout_s);

}  // namespace kgym
