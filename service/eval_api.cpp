#include "service/eval_api.hpp"

#include "messages/json.hpp"

namespace kgym {

decoded_request decode_eval_request(const std::string& frame, size_t max_bytes) {
  decoded_request d;
  if (frame.size() > max_bytes) {
    d.error = "request of " + std::to_string(frame.size()) + " bytes is over the server's limit of " +
              std::to_string(max_bytes) + " bytes (kgym serve --max-request-bytes)";
    return d;
  }
  d.json = !frame.empty() && frame[0] == '{';
  if (d.json) {
    std::string error = from_json(frame, &d.request);
    if (!error.empty())
      d.error = "the JSON is not an EvalRequest: " + error;
  } else if (frame.empty() || !d.request.ParseFromString(frame)) {
    d.error = "the frame is neither EvalRequest protobuf bytes nor its JSON mapping (messages/kgym.proto)";
  }
  return d;
}

std::string check_eval_request(EvalRequest* request, const std::map<std::string, Task>& suite,
                               const std::string& secret, bool* from_suite) {
  if (!secret.empty() && !secrets_equal(request->secret(), secret))
    return request->secret().empty() ? "this server requires a secret: set EvalRequest.secret"
                                     : "wrong secret: the request is refused";
  if (request->request_id().empty())
    return "request_id is missing: give every request a unique id (a retry reuses it)";
  if (request->withdraw())
    return "";  // the id is all a withdrawal needs
  if (request->candidate_source().empty())
    return "candidate_source is missing: send the Python program that defines ModelNew";
  if (request->has_task()) {
    if (request->task().source().empty())
      return "task.source is missing: send the KernelBench program (Model, get_inputs, get_init_inputs)";
    if (request->task().id().empty())
      request->mutable_task()->set_id(request->task_id().empty() ? "client_task" : request->task_id());
    return "";
  }
  if (request->task_id().empty())
    return "no task: set task_id (one of the server's tasks) or task";
  auto found = suite.find(request->task_id());
  if (found == suite.end())
    return "unknown task '" + request->task_id() + "': the server has " + std::to_string(suite.size()) +
           " tasks (kgym tasks lists them), or send the task itself";
  *request->mutable_task() = found->second;
  if (from_suite)
    *from_suite = true;
  return "";
}

std::string encode_eval_result(const EvalResult& result, bool json) {
  return json ? to_json(result) : result.SerializeAsString();
}

bool is_loopback_host(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]";
}

bool is_loopback_endpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0)
    return true;
  const std::string tcp = "tcp://";
  const auto colon = endpoint.rfind(':');
  return endpoint.rfind(tcp, 0) == 0 && colon > tcp.size() &&
         is_loopback_host(endpoint.substr(tcp.size(), colon - tcp.size()));
}

std::string pending_json(const std::string& request_id) {
  EvalPending pending;
  pending.set_request_id(request_id);
  pending.set_pending(true);
  return to_json(pending);
}

bool secrets_equal(const std::string& given, const std::string& expected) {
  // Every byte of `expected` is looked at whatever `given` holds; only the lengths' equality
  // shows in the time (the length of a secret is not the secret).
  unsigned char differ = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i)
    differ |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : ~expected[i]));
  return differ == 0;
}

}  // namespace kgym
