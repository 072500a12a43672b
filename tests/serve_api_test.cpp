// `kgym serve` as an RL framework uses it: a real server process, real ZeroMQ sockets on
// loopback, real sandboxed evaluations on the CPU. Good requests (JSON and protobuf frames)
// get their verdicts; malformed, oversized, incomplete, unknown-task and wrong-secret
// requests get clear refusals; a retried id is answered from the first evaluation; the
// server keeps serving throughout and stops cleanly on SIGTERM.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <zmq.hpp>

#include "messages/json.hpp"
#include "messages/kgym.pb.h"
#include "tests/test_support.hpp"

namespace kgym::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct server {
  pid_t pid = -1;
  std::string endpoint;
};

server start_server(const std::string& name, const std::vector<std::string>& extra, const char* secret = nullptr) {
  std::string file = (fs::temp_directory_path() / ("kgym-serve-" + std::to_string(::getpid()) + "-" + name)).string();
  fs::remove(file);
  std::vector<std::string> args = {KGYM_BINARY, "serve", "--listen", "tcp://127.0.0.1:*", "--endpoint-file", file};
  args.insert(args.end(), extra.begin(), extra.end());
  server s;
  s.pid = ::fork();
  if (s.pid == 0) {
    if (secret)
      ::setenv("KGYM_API_SECRET", secret, 1);
    else
      ::unsetenv("KGYM_API_SECRET");
    std::vector<char*> argv;
    for (auto& arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 300 && s.endpoint.empty(); ++i) {
    std::this_thread::sleep_for(100ms);
    std::ifstream(file) >> s.endpoint;
  }
  return s;
}

int stop_server(const server& s) {
  ::kill(s.pid, SIGTERM);
  int status = 0;
  ::waitpid(s.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class client {
 public:
  explicit client(const std::string& endpoint) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }
  void send(const std::string& frame) { socket_.send(zmq::buffer(frame), zmq::send_flags::none); }
  void send(const EvalRequest& r, bool json = true) { send(json ? to_json(r) : r.SerializeAsString()); }
  // The next answer, decoded from JSON or protobuf; fails the test after `timeout`.
  EvalResult receive(std::chrono::seconds timeout = 240s) {
    zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 1, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    EvalResult r;
    if (!(items[0].revents & ZMQ_POLLIN)) {
      ADD_FAILURE() << "no answer within " << timeout.count() << " s";
      r.set_error("timeout");
      return r;
    }
    zmq::message_t message;
    (void)socket_.recv(message);
    std::string frame = message.to_string();
    if (!frame.empty() && frame[0] == '{')
      EXPECT_EQ(from_json(frame, &r), "") << frame;
    else
      EXPECT_TRUE(r.ParseFromString(frame));
    return r;
  }

 private:
  zmq::context_t context_;
  zmq::socket_t socket_;
};

EvalRequest request(const std::string& id, const std::string& task, const std::string& candidate) {
  EvalRequest r;
  r.set_request_id(id);
  r.set_task_id(task);
  r.set_candidate_source(read_text(source_path("tasks/" + task + "/candidates/" + candidate + ".py")));
  r.mutable_options()->set_correctness_trials(2);
  return r;
}

TEST(ServeApi, AnswersEveryRequestOnceAndRefusesBadInputClearly) {
  server s = start_server("main", {"--executors", "2"});
  ASSERT_FALSE(s.endpoint.empty()) << "kgym serve did not start";
  client c(s.endpoint);
  std::map<std::string, Verdict> expected = {
      {"gelu-fused", OK}, {"gelu-wrong", INCORRECT}, {"gelu-cheat", HACKED}, {"softmax-fused", OK},
      {"softmax-cheat", HACKED}, {"softmax-wrong", INCORRECT}};
  for (const auto& [id, verdict] : expected) {
    std::string task = id.rfind("gelu", 0) == 0 ? "gelu_scale_residual" : "softmax_rows";
    c.send(request(id, task, id.substr(id.find('-') + 1)), /*json=*/id != "softmax-wrong");
  }
  c.send(request("gelu-fused", "gelu_scale_residual", "fused"));  // a retry: answered once, as a duplicate
  // Bad input, interleaved with the work above.
  c.send(std::string("\x08\x96\x01garbage that is not a protobuf \xff\xfe", 36));
  c.send("{\"request_id\": \"x\", \"no_such_field\": 1}");
  c.send("{" + std::string(5 << 20, ' ') + "}");
  EvalRequest unknown;
  unknown.set_request_id("unknown");
  unknown.set_task_id("no_such_task");
  unknown.set_candidate_source("class ModelNew: pass");
  c.send(unknown);
  EvalRequest missing;
  missing.set_request_id("missing");
  missing.set_task_id("softmax_rows");
  c.send(missing);
  EvalRequest no_id = request("", "softmax_rows", "fused");
  c.send(no_id);

  std::map<std::string, int> answers;
  std::vector<std::string> refusals;
  int duplicates = 0;
  for (size_t n = 0; n < expected.size() + 1 + 6; ++n) {
    EvalResult r = c.receive();
    if (!r.error().empty()) {
      refusals.push_back(r.error());
      continue;
    }
    ++answers[r.request_id()];
    duplicates += r.duplicate();
    ASSERT_TRUE(expected.count(r.request_id())) << r.request_id();
    EXPECT_EQ(Verdict_Name(r.result().verdict()), Verdict_Name(expected[r.request_id()]))
        << r.request_id() << ": " << r.result().message();
  }
  for (const auto& [id, verdict] : expected)
    EXPECT_EQ(answers[id], id == "gelu-fused" ? 2 : 1) << id;
  EXPECT_EQ(duplicates, 1);
  ASSERT_EQ(refusals.size(), 6u);
  auto refused = [&](const std::string& phrase) {
    for (const auto& r : refusals)
      if (r.find(phrase) != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(refused("neither EvalRequest protobuf bytes nor its JSON mapping"));
  EXPECT_TRUE(refused("not an EvalRequest"));
  EXPECT_TRUE(refused("over the server's limit"));
  EXPECT_TRUE(refused("unknown task 'no_such_task'"));
  EXPECT_TRUE(refused("candidate_source is missing"));
  EXPECT_TRUE(refused("request_id is missing"));

  // Still serving after all that.
  c.send(request("after", "gelu_scale_residual", "fused"), false);
  EvalResult after = c.receive();
  EXPECT_EQ(after.request_id(), "after");
  EXPECT_EQ(Verdict_Name(after.result().verdict()), "OK") << after.error() << after.result().message();
  EXPECT_EQ(stop_server(s), 0);
}

TEST(ServeApi, SecretsAreRequiredWhereConfigured) {
  server s = start_server("secret", {"--executors", "1"}, "s3cret");
  ASSERT_FALSE(s.endpoint.empty());
  client c(s.endpoint);
  EvalRequest r = request("no-secret", "gelu_scale_residual", "fused");
  c.send(r);
  EXPECT_NE(c.receive().error().find("requires a secret"), std::string::npos);
  r.set_request_id("wrong-secret");
  r.set_secret("guess");
  c.send(r);
  EXPECT_NE(c.receive().error().find("wrong secret"), std::string::npos);
  r.set_request_id("right-secret");
  r.set_secret("s3cret");
  c.send(r);
  EvalResult ok = c.receive();
  EXPECT_EQ(ok.error(), "");
  EXPECT_EQ(Verdict_Name(ok.result().verdict()), "OK");
  EXPECT_EQ(stop_server(s), 0);

  // Beyond loopback without a secret: refused at start, with the way out in the message.
  std::string out;
  FILE* pipe = ::popen((std::string("env -u KGYM_API_SECRET ") + KGYM_BINARY +
                        " serve --listen tcp://0.0.0.0:0 2>&1; echo exit=$?").c_str(), "r");
  char buffer[512];
  while (pipe && fgets(buffer, sizeof buffer, pipe))
    out += buffer;
  if (pipe)
    ::pclose(pipe);
  EXPECT_NE(out.find("without a secret"), std::string::npos) << out;
  EXPECT_NE(out.find("exit=2"), std::string::npos) << out;
}

}  // namespace
}  // namespace kgym::test
