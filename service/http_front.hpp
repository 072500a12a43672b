// The evaluation API's HTTP/JSON endpoint on cpp-httplib (keep-alive, chunked bodies,
// percent-decoding, a body limit answered 413): its threads take each request and wait while
// the serving thread decides the answer, so the request table and the journal stay with that
// one thread. A long poll is a call the serving thread answers later (or at its deadline).
#pragma once

#include <httplib.h>

#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kgym {

struct http_request {
  std::string method;
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // ?a=1&b=2
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string peer;                            // "ADDRESS:PORT" the call came from (for the log)
};

struct http_answer {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class http_front {
 public:
  // Serves host:port (port 0 picks one) on threads of its own; throws if it cannot bind.
  // `max_connections`: calls served at once, long polls included (each holds a thread).
  http_front(const std::string& host, int port, size_t max_body_bytes, size_t max_connections = 64);
  ~http_front();
  int port() const { return port_; }
  // Readable while calls wait to be taken (poll it beside the other sockets).
  int wake_fd() const { return wake_fd_; }
  // The calls that arrived, each with the id its answer goes by.
  std::vector<std::pair<uint64_t, http_request>> take();
  // Answers call `id` (once; later answers to it are ignored).
  void answer(uint64_t id, http_answer a);

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  int wake_fd_ = -1;
  std::mutex mutex_;
  bool stopping_ = false;
  uint64_t next_id_ = 0;
  std::deque<std::pair<uint64_t, http_request>> arrived_;
  std::map<uint64_t, std::promise<http_answer>> open_;
};

}  // namespace kgym
