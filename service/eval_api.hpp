// The evaluation API's request handling, as pure functions: decoding a frame (protobuf or
// its JSON mapping), and checking a request before it may use an executor. Every refusal
// says what is wrong and what to do.
#pragma once

#include <map>
#include <string>

#include "messages/kgym.pb.h"

namespace kgym {

struct decoded_request {
  EvalRequest request;
  bool json = false;   // answer in the JSON mapping too
  std::string error;   // empty when the frame decoded
};

decoded_request decode_eval_request(const std::string& frame, size_t max_bytes);

// Fills request->task from `suite` when only task_id is given, and then sets *from_suite (if
// given; the journal keeps such a request by its task id). Empty string: accepted.
std::string check_eval_request(EvalRequest* request, const std::map<std::string, Task>& suite,
                               const std::string& secret, bool* from_suite = nullptr);

std::string encode_eval_result(const EvalResult& result, bool json);

// The JSON of EvalPending for `request_id` (any characters: escaped by the JSON mapping).
std::string pending_json(const std::string& request_id);

// Whether a secret a client gave is the server's, in time that does not depend on where they
// first differ (a byte-by-byte comparison that stops early would let a client find it byte
// by byte).
bool secrets_equal(const std::string& given, const std::string& expected);

// True for tcp://127.0.0.1:PORT, tcp://localhost:PORT, tcp://[::1]:PORT, ipc:// and inproc://.
bool is_loopback_endpoint(const std::string& endpoint);
// 127.0.0.1, localhost or ::1: the hosts that need no secret or cluster credentials.
bool is_loopback_host(const std::string& host);

}  // namespace kgym
