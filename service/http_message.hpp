// Just enough HTTP/1.1 for the evaluation API's JSON endpoint: parse one request from the
// bytes a connection sent so far, and format a response. Pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace kgym {

struct http_request {
  std::string method;
  std::string path;                          // without the query
  std::map<std::string, std::string> query;  // ?a=1&b=2
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

struct http_parse {
  std::optional<http_request> request;  // set once a whole request has arrived
  std::string error;                    // the bytes can never become a request (answer 400/413)
  int error_status = 400;
};

http_parse parse_http_request(const std::string& bytes, size_t max_bytes);

// "HTTP/1.1 <status> <reason>" with a JSON body; the connection closes after it.
std::string http_response(int status, const std::string& body,
                          const std::string& content_type = "application/json");

}  // namespace kgym
