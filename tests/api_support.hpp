// Helpers for the tests that run kgym's servers as processes and talk to them over ZeroMQ.
#pragma once

#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "messages/kgym.pb.h"

namespace kgym::test {

struct server {
  pid_t pid = -1;
  std::string endpoint;  // what the server wrote to its endpoint file
};

// Runs `kgym serve --api tcp://127.0.0.1:* --endpoint-file F <extra...>` and waits for F.
// `secret`: KGYM_API_SECRET for the server (unset when null).
server start_server(const std::string& name, const std::vector<std::string>& extra, const char* secret = nullptr);

// The kgym binary under test.
std::string kgym_binary();

// Runs `kgym <args...>` (stderr to `log`, if given) and returns its pid.
pid_t start_kgym(const std::vector<std::string>& args, const std::string& log = "");

// Runs any program (looked up on PATH; stdout and stderr to `log`, if given); returns its pid.
pid_t start_program(std::vector<std::string> argv, const std::string& log = "");

// The first line of `path`, waiting up to `timeout` for it to appear.
std::string wait_for_line(const std::string& path, std::chrono::seconds timeout = std::chrono::seconds(30));

// Waits for the process to end: its exit code (128 + signal when killed).
int wait_exit(pid_t pid);

// SIGTERM, then the exit code (128 + signal when killed).
int stop_process(pid_t pid);

// Waits at most `limit` for the process to end: its exit code, or -1 when it was still
// running (it is then SIGKILLed and reaped, so a hang fails the test instead of stalling it).
int wait_exit_within(pid_t pid, std::chrono::seconds limit);

class client {
 public:
  // `routing_id`: the client's ZeroMQ identity (as kgym_client.py sets one), so that a server
  // restarted from its journal can deliver to it again; empty: ZeroMQ picks one.
  explicit client(const std::string& endpoint, const std::string& routing_id = "");
  void send(const std::string& frame);
  void send(const EvalRequest& r, bool json = true);
  // The next answer, decoded from JSON or protobuf; a test failure after `timeout`.
  EvalResult receive(std::chrono::seconds timeout = std::chrono::seconds(240));
  // Whether a message arrives within `wait` (left unread).
  bool message_within(std::chrono::milliseconds wait);

 private:
  zmq::context_t context_;
  zmq::socket_t socket_;
};

struct http_reply {
  int status = 0;
  std::string body;
};

// One HTTP/1.1 exchange with host:port (an IPv4 address) over a plain socket (the server closes after it).
http_reply http_call(int port, const std::string& method, const std::string& target, const std::string& body = "",
                     const std::string& extra_headers = "", const std::string& host = "127.0.0.1");

// A request for a shipped candidate of a built-in task (2 correctness trials).
EvalRequest request(const std::string& id, const std::string& task, const std::string& candidate);

}  // namespace kgym::test
