#include "service/http_message.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace kgym {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

http_parse parse_http_request(const std::string& bytes, size_t max_bytes) {
  http_parse result;
  size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    if (bytes.size() > 64 * 1024)
      result.error = "the request's headers are over 64 KiB";
    return result;
  }
  std::istringstream head(bytes.substr(0, head_end));
  http_request r;
  std::string line, version, target;
  std::getline(head, line);
  std::istringstream first(line);
  if (!(first >> r.method >> target >> version) || version.rfind("HTTP/1.", 0) != 0) {
    result.error = "not an HTTP/1.x request line: '" + trim(line) + "'";
    return result;
  }
  while (std::getline(head, line)) {
    auto colon = line.find(':');
    if (colon != std::string::npos)
      r.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  auto question = target.find('?');
  r.path = target.substr(0, question);
  if (question != std::string::npos) {
    std::istringstream query(target.substr(question + 1));
    std::string pair;
    while (std::getline(query, pair, '&')) {
      auto eq = pair.find('=');
      r.query[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
    }
  }
  size_t length = 0;
  if (r.headers.count("content-length")) {
    try {
      length = std::stoul(r.headers["content-length"]);
    } catch (...) {
      result.error = "Content-Length is not a number";
      return result;
    }
  }
  if (length > max_bytes) {
    result.error = "request body of " + std::to_string(length) + " bytes is over the server's limit of " +
                   std::to_string(max_bytes) + " bytes (kgym serve --max-request-bytes)";
    result.error_status = 413;
    return result;
  }
  if (bytes.size() < head_end + 4 + length)
    return result;  // the body is still arriving
  r.body = bytes.substr(head_end + 4, length);
  result.request = std::move(r);
  return result;
}

std::string http_response(int status, const std::string& body, const std::string& content_type) {
  const char* reason = status == 200   ? "OK"
                       : status == 202 ? "Accepted"
                       : status == 400 ? "Bad Request"
                       : status == 401 ? "Unauthorized"
                       : status == 404 ? "Not Found"
                       : status == 405 ? "Method Not Allowed"
                       : status == 413 ? "Payload Too Large"
                       : status == 503 ? "Service Unavailable"
                                       : "Error";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace kgym
