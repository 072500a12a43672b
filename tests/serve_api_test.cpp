// `kgym serve` as an RL framework uses it: a real server process, real ZeroMQ sockets on
// loopback, real sandboxed evaluations on the CPU. Good requests (JSON and protobuf frames)
// get their verdicts; malformed, oversized, incomplete, unknown-task and wrong-secret
// requests get clear refusals; a retried id is answered from the first evaluation; the
// server keeps serving throughout and stops cleanly on SIGTERM.
#include <gtest/gtest.h>
#include <httplib.h>

#include <signal.h>
#include <sstream>
#include <sys/socket.h>
#include <poll.h>
#include <netinet/in.h>
#include <arpa/inet.h>
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
#include "tests/api_support.hpp"
#include "tests/test_support.hpp"

namespace kgym::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

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
  EXPECT_EQ(stop_process(s.pid), 0);
}

// serve --option: the server's EvalOptions defaults fill what a request's own options leave
// unset, and a request's own settings win; a malformed one ends serve at once, saying which.
TEST(ServeApi, ItsOptionsFillWhatARequestLeavesUnset) {
  server s = start_server("options", {"--executors", "1", "--option", "correctness_trials=3"});
  ASSERT_FALSE(s.endpoint.empty()) << "kgym serve did not start";
  client c(s.endpoint);
  EvalRequest unset = request("unset", "gelu_scale_residual", "fused");
  unset.mutable_options()->clear_correctness_trials();
  c.send(unset);
  c.send(request("own", "gelu_scale_residual", "fused"));  // correctness_trials 2 of its own
  std::map<std::string, int> trials;
  for (int n = 0; n < 2; ++n) {
    EvalResult r = c.receive();
    EXPECT_EQ(Verdict_Name(r.result().verdict()), "OK") << r.request_id() << ": " << r.error() << r.result().message();
    trials[r.request_id()] = r.result().trials_size();
  }
  EXPECT_EQ(trials["unset"], 6);  // 3 trials, each in train and eval mode
  EXPECT_EQ(trials["own"], 4);
  EXPECT_EQ(stop_process(s.pid), 0);

  const std::string log = fs::temp_directory_path().string() + "/kgym-options-" + std::to_string(::getpid()) + ".log";
  pid_t bad = start_kgym({"serve", "--executors", "0", "--api", "tcp://127.0.0.1:*", "--option", "no_such=1"}, log);
  EXPECT_EQ(wait_exit_within(bad, 20s), 2);
  EXPECT_NE(read_text(log).find("--option no_such=1: no field 'no_such' in EvalOptions"), std::string::npos) << read_text(log);
  fs::remove(log);
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
  EXPECT_EQ(stop_process(s.pid), 0);

  // Beyond loopback without a secret: refused at start, with the way out in the message.
  std::string out;
  FILE* pipe = ::popen(("env -u KGYM_API_SECRET " + kgym_binary() +
                        " serve --api tcp://0.0.0.0:0 2>&1; echo exit=$?").c_str(), "r");
  char buffer[512];
  while (pipe && fgets(buffer, sizeof buffer, pipe))
    out += buffer;
  if (pipe)
    ::pclose(pipe);
  EXPECT_NE(out.find("without a secret"), std::string::npos) << out;
  EXPECT_NE(out.find("exit=2"), std::string::npos) << out;
}

TEST(ServeApi, HttpJsonSubmitPollWaitAndBatch) {
  std::string port_file = (fs::temp_directory_path() / ("kgym-http-port-" + std::to_string(::getpid()))).string();
  std::string web_file = port_file + "-web";
  fs::remove(port_file);
  fs::remove(web_file);
  server s = start_server("http", {"--executors", "2", "--http", "127.0.0.1:0", "--http-file", port_file, "--web",
                                   "127.0.0.1:0", "--web-file", web_file});
  ASSERT_FALSE(s.endpoint.empty());
  int port = std::stoi(wait_for_line(port_file));
  EvalBatch batch;
  *batch.add_requests() = request("h-fused", "gelu_scale_residual", "fused");
  *batch.add_requests() = request("h-wrong", "softmax_rows", "wrong");
  auto* unknown = batch.add_requests();
  unknown->set_request_id("h-unknown");
  unknown->set_task_id("no_such_task");
  unknown->set_candidate_source("class ModelNew: pass");
  http_reply submitted = http_call(port, "POST", "/v1/evaluations", to_json(batch));
  ASSERT_EQ(submitted.status, 202) << submitted.body;
  EvalSubmitted accepted;
  ASSERT_EQ(from_json(submitted.body, &accepted), "") << submitted.body;
  EXPECT_EQ(accepted.accepted_size(), 2);
  ASSERT_EQ(accepted.refused_size(), 1);
  EXPECT_NE(accepted.refused(0).error().find("unknown task"), std::string::npos);

  http_reply pending = http_call(port, "GET", "/v1/evaluations/h-fused");
  EXPECT_TRUE(pending.status == 202 || pending.status == 200) << pending.status;
  for (const auto& [id, verdict] : std::map<std::string, std::string>{{"h-fused", "OK"}, {"h-wrong", "INCORRECT"}}) {
    http_reply done = http_call(port, "GET", "/v1/evaluations/" + id + "?wait=120");
    ASSERT_EQ(done.status, 200) << id << ": " << done.body;
    EvalResult r;
    ASSERT_EQ(from_json(done.body, &r), "") << done.body;
    EXPECT_EQ(Verdict_Name(r.result().verdict()), verdict) << id;
  }
  // The page for people (--web) lists both answers, newest first, and the two executors.
  httplib::Client page("127.0.0.1", std::stoi(wait_for_line(web_file)));
  ServeView view;
  for (int i = 0; i < 20 && view.recent_size() < 2; ++i) {  // the loop publishes within a pass
    auto got = page.Get("/api/serve");
    ASSERT_TRUE(got);
    ASSERT_EQ(got->status, 200);
    EXPECT_NE(got->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
    ASSERT_EQ(from_json(got->body, &view), "") << got->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(view.recent_size(), 2);
  std::map<std::string, Verdict> listed;
  for (const auto& r : view.recent())
    listed[r.request_id()] = r.verdict();
  EXPECT_EQ(listed, (std::map<std::string, Verdict>{{"h-fused", OK}, {"h-wrong", INCORRECT}}));
  EXPECT_EQ(view.status().scheduler().executors_size(), 2);
  auto home = page.Get("/");
  ASSERT_TRUE(home);
  EXPECT_NE(home->body.find("<script src=\"/serve.js\""), std::string::npos);
  EXPECT_EQ(page.Get("/api/serve?limit=0")->status, 400);
  EXPECT_EQ(page.Get("/index.html")->status, 404);  // the run's view is kgym web's
  // A single EvalRequest body works too; bad bodies, unknown ids and paths get clear errors.
  EXPECT_EQ(http_call(port, "POST", "/v1/evaluations", to_json(request("h-one", "softmax_rows", "fused"))).status, 202);
  http_reply garbage = http_call(port, "POST", "/v1/evaluations", "not json");
  EXPECT_EQ(garbage.status, 400);
  EXPECT_NE(garbage.body.find("neither an EvalRequest nor an EvalBatch"), std::string::npos) << garbage.body;
  EXPECT_EQ(http_call(port, "GET", "/v1/evaluations/never-submitted").status, 404);
  EXPECT_EQ(http_call(port, "GET", "/elsewhere").status, 404);
  EXPECT_EQ(http_call(port, "PUT", "/v1/evaluations").status, 405);
  http_reply huge = http_call(port, "POST", "/v1/evaluations", std::string(5 << 20, ' '));
  EXPECT_EQ(huge.status, 413) << huge.body;
  http_reply one = http_call(port, "GET", "/v1/evaluations/h-one?wait=120");
  EXPECT_EQ(one.status, 200) << one.body;  // still serving
  EXPECT_EQ(stop_process(s.pid), 0);
}

// HTTP as clients speak it (cpp-httplib under the endpoint): two requests on one kept-alive
// connection, a chunked request body, a percent-encoded id in the path.
TEST(ServeApi, HttpKeepsConnectionsTakesChunkedBodiesAndDecodesPaths) {
  std::string port_file = (fs::temp_directory_path() / ("kgym-http11-port-" + std::to_string(::getpid()))).string();
  fs::remove(port_file);
  server s = start_server("http11", {"--executors", "1", "--http", "127.0.0.1:0", "--http-file", port_file});
  ASSERT_FALSE(s.endpoint.empty());
  const int port = std::stoi(wait_for_line(port_file));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string body = to_json(request("a b", "softmax_rows", "fused"));
  std::ostringstream chunked;
  chunked << std::hex << body.size() / 2 << "\r\n" << body.substr(0, body.size() / 2) << "\r\n"
          << body.size() - body.size() / 2 << "\r\n" << body.substr(body.size() / 2) << "\r\n0\r\n\r\n";
  // One request, its whole answer, then the next on the same connection.
  auto exchange = [&](const std::string& message, const std::string& until_text) {
    EXPECT_EQ(::send(fd, message.data(), message.size(), MSG_NOSIGNAL), static_cast<ssize_t>(message.size()));
    std::string got;
    char buffer[4096];
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got.find(until_text) == std::string::npos && std::chrono::steady_clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 200) > 0) {
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          break;
        got.append(buffer, static_cast<size_t>(n));
      }
    }
    return got;
  };
  std::string received = exchange("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", "}");
  received += exchange("POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                           chunked.str(),
                       "accepted");
  ::close(fd);
  EXPECT_EQ(received.rfind("HTTP/1.1 200", 0), 0u) << received;
  EXPECT_NE(received.find("HTTP/1.1 202"), std::string::npos) << "no answer to the second request: " << received;
  EXPECT_NE(received.find(R"("accepted":["a b"])"), std::string::npos) << received;
  http_reply answer = http_call(port, "GET", "/v1/evaluations/a%20b?wait=120");
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_NE(answer.body.find(R"("verdict":"OK")"), std::string::npos) << answer.body;
  EXPECT_EQ(stop_process(s.pid), 0);
}

// DELETE withdraws a request: one running (a candidate that loops for ever) is stopped and one
// queued behind it never runs; both are answered CANCELLED at once, the executor goes on to
// evaluate the next request; an unknown id is 404, an answered one 409.
TEST(ServeApi, DeleteWithdrawsRunningAndQueuedRequests) {
  std::string port_file = (fs::temp_directory_path() / ("kgym-delete-port-" + std::to_string(::getpid()))).string();
  fs::remove(port_file);
  server s = start_server("delete", {"--executors", "1", "--http", "127.0.0.1:0", "--http-file", port_file});
  ASSERT_FALSE(s.endpoint.empty());
  int port = std::stoi(wait_for_line(port_file));
  EvalBatch batch;
  for (const std::string id : {"d-running", "d-queued"}) {
    EvalRequest* r = batch.add_requests();
    *r = request(id, "gelu_scale_residual", "fused");
    r->set_candidate_source(r->candidate_source() + "\n" + read_text(source_path("tests/hostile/infinite_loop.py")) +
                            "\n# " + id);  // two programs: no deduplication
  }
  *batch.add_requests() = request("d-after", "gelu_scale_residual", "fused");
  ASSERT_EQ(http_call(port, "POST", "/v1/evaluations", to_json(batch)).status, 202);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // d-running is in its loop by now
  const auto started = std::chrono::steady_clock::now();
  for (const std::string id : {"d-queued", "d-running"}) {
    http_reply withdrawn = http_call(port, "DELETE", "/v1/evaluations/" + id);
    EXPECT_EQ(withdrawn.status, 202) << id << ": " << withdrawn.body;
    http_reply answer = http_call(port, "GET", "/v1/evaluations/" + id + "?wait=30");
    ASSERT_EQ(answer.status, 200) << id << ": " << answer.body;
    EvalResult r;
    ASSERT_EQ(from_json(answer.body, &r), "") << answer.body;
    EXPECT_EQ(Verdict_Name(r.result().verdict()), "CANCELLED") << id << ": " << r.result().message();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5.0)
      << "withdrawing took as long as an evaluation";
  http_reply after = http_call(port, "GET", "/v1/evaluations/d-after?wait=120");
  ASSERT_EQ(after.status, 200) << after.body;
  EvalResult r;
  ASSERT_EQ(from_json(after.body, &r), "") << after.body;
  EXPECT_EQ(Verdict_Name(r.result().verdict()), "OK") << "the executor did not go on: " << r.result().message();
  EXPECT_LT(r.result().wall_s(), 30.0);
  EXPECT_EQ(http_call(port, "DELETE", "/v1/evaluations/never-submitted").status, 404);
  EXPECT_EQ(http_call(port, "DELETE", "/v1/evaluations/d-after").status, 409);
  EXPECT_EQ(stop_process(s.pid), 0);
}

// The routes a service user expects besides the evaluations: health (no secret), status and
// Prometheus metrics (behind the secret), counting what the server really did.
TEST(ServeApi, HealthStatusAndMetricsSayWhatTheServerDid) {
  std::string port_file = (fs::temp_directory_path() / ("kgym-metrics-port-" + std::to_string(::getpid()))).string();
  fs::remove(port_file);
  server s = start_server("metrics", {"--executors", "2", "--http", "127.0.0.1:0", "--http-file", port_file},
                          "metrics-secret");
  ASSERT_FALSE(s.endpoint.empty());
  const int port = std::stoi(wait_for_line(port_file));
  const std::string auth = "Authorization: Bearer metrics-secret\r\n";
  http_reply health = http_call(port, "GET", "/v1/health");
  ASSERT_EQ(health.status, 200) << health.body;
  ServeHealth h;
  ASSERT_EQ(from_json(health.body, &h), "") << health.body;
  EXPECT_TRUE(h.ok());
  EXPECT_EQ(h.executors(), 2);
  EXPECT_EQ(http_call(port, "GET", "/metrics").status, 401);
  EXPECT_EQ(http_call(port, "GET", "/v1/status").status, 401);

  EvalBatch batch;
  *batch.add_requests() = request("m-fused", "gelu_scale_residual", "fused");
  *batch.add_requests() = request("m-wrong", "softmax_rows", "wrong");
  batch.add_requests()->set_request_id("m-refused");  // no task, no source
  ASSERT_EQ(http_call(port, "POST", "/v1/evaluations", to_json(batch), auth).status, 202);
  for (const char* id : {"m-fused", "m-wrong"})
    ASSERT_EQ(http_call(port, "GET", std::string("/v1/evaluations/") + id + "?wait=120", "", auth).status, 200) << id;

  http_reply status = http_call(port, "GET", "/v1/status", "", auth);
  ASSERT_EQ(status.status, 200) << status.body;
  ServeStatus st;
  ASSERT_EQ(from_json(status.body, &st), "") << status.body;
  EXPECT_EQ(st.scheduler().executors_size(), 2);
  EXPECT_EQ(st.scheduler().queued(), 0);
  EXPECT_EQ(st.requests_in_flight(), 0);
  EXPECT_EQ(st.answers_kept(), 2);
  EXPECT_EQ(st.refused(), 1);
  EXPECT_GT(st.uptime_s(), 0.0);

  http_reply metrics = http_call(port, "GET", "/metrics", "", auth);
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  for (const char* line : {"kgym_evaluations_total{verdict=\"OK\"} 1\n", "kgym_evaluations_total{verdict=\"INCORRECT\"} 1\n",
                           "kgym_evaluations_total{verdict=\"HACKED\"} 0\n", "kgym_evaluation_seconds_count 2\n",
                           "kgym_evaluation_seconds_bucket{le=\"+Inf\"} 2\n", "kgym_requests_refused_total 1\n",
                           "kgym_executors 2\n", "kgym_queue_depth 0\n", "kgym_requests_in_flight 0\n"})
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << " not in:\n" << metrics.body;
  EXPECT_EQ(stop_process(s.pid), 0);
}

// A pending answer is JSON whatever characters its request id holds (quotes, backslashes),
// and a wrong secret of the right length is refused like any other.
TEST(ServeApi, APendingAnswerIsJsonWhateverTheId) {
  std::string port_file = (fs::temp_directory_path() / ("kgym-pending-port-" + std::to_string(::getpid()))).string();
  fs::remove(port_file);
  server s = start_server("pending", {"--executors", "0", "--http", "127.0.0.1:0", "--http-file", port_file,
                                      "--drain-timeout", "1"},
                          "pending-secret");
  ASSERT_FALSE(s.endpoint.empty());
  const int port = std::stoi(wait_for_line(port_file));
  const std::string id = "q\"1\\x";
  const std::string auth = "Authorization: Bearer pending-secret\r\n";
  EXPECT_EQ(http_call(port, "POST", "/v1/evaluations", to_json(request(id, "softmax_rows", "fused")),
                      "Authorization: Bearer pending-secreT\r\n")
                .status,
            401);
  ASSERT_EQ(http_call(port, "POST", "/v1/evaluations", to_json(request(id, "softmax_rows", "fused")), auth).status,
            202);
  http_reply pending = http_call(port, "GET", "/v1/evaluations/" + id, "", auth);
  ASSERT_EQ(pending.status, 202) << pending.body;
  EvalPending answer;
  ASSERT_EQ(from_json(pending.body, &answer), "") << pending.body;
  EXPECT_EQ(answer.request_id(), id);
  EXPECT_TRUE(answer.pending());
  EXPECT_EQ(stop_process(s.pid), 0);
}

// A restart loses nothing: requests accepted by a server that is then SIGKILLed with them
// unfinished (it has no executor) are evaluated by the next server started with the same
// --state-dir, without any client re-sending them; answers survive a second restart and a
// re-sent id is answered from the journal (duplicate).
TEST(ServeApi, ARestartWithTheJournalLosesNothing) {
  const std::string state = (fs::temp_directory_path() / ("kgym-state-" + std::to_string(::getpid()))).string();
  const std::string port_file = state + "-http-port";
  fs::remove_all(state);
  std::map<std::string, std::string> expected;  // id -> verdict
  EvalBatch batch;
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"gelu_scale_residual", "fused"}, {"softmax_rows", "wrong"}, {"rmsnorm_rows", "fused"}, {"mse_loss", "fused"}};
  for (size_t i = 0; i < 8; ++i) {
    const auto& [task, candidate] = programs[i % programs.size()];
    const std::string id = "j" + std::to_string(i) + "-" + task + "-" + candidate;
    *batch.add_requests() = request(id, task, candidate);
    expected[id] = candidate == "wrong" ? "INCORRECT" : "OK";
  }
  {
    fs::remove(port_file);
    server first = start_server("journal1", {"--executors", "0", "--state-dir", state, "--http", "127.0.0.1:0",
                                             "--http-file", port_file});
    ASSERT_FALSE(first.endpoint.empty());
    http_reply submitted = http_call(std::stoi(wait_for_line(port_file)), "POST", "/v1/evaluations", to_json(batch));
    ASSERT_EQ(submitted.status, 202) << submitted.body;
    ::kill(first.pid, SIGKILL);
    wait_exit(first.pid);
  }
  {
    fs::remove(port_file);
    server second = start_server("journal2", {"--executors", "2", "--state-dir", state, "--http", "127.0.0.1:0",
                                              "--http-file", port_file});
    ASSERT_FALSE(second.endpoint.empty());
    const int port = std::stoi(wait_for_line(port_file));
    for (const auto& [id, verdict] : expected) {
      http_reply done = http_call(port, "GET", "/v1/evaluations/" + id + "?wait=120");
      ASSERT_EQ(done.status, 200) << id << ": " << done.body;
      EvalResult r;
      ASSERT_EQ(from_json(done.body, &r), "") << done.body;
      EXPECT_EQ(Verdict_Name(r.result().verdict()), verdict) << id;
    }
    ::kill(second.pid, SIGKILL);
    wait_exit(second.pid);
  }
  server third = start_server("journal3", {"--executors", "0", "--state-dir", state});
  ASSERT_FALSE(third.endpoint.empty());
  client c(third.endpoint);
  c.send(batch.requests(1));
  EvalResult again = c.receive(10s);
  EXPECT_TRUE(again.duplicate());
  EXPECT_EQ(Verdict_Name(again.result().verdict()), expected[batch.requests(1).request_id()]);
  // Every answer the second server handed out was journaled before it did (killed right after
  // the last one): the third evaluates nothing again.
  const std::string third_log = read_text((fs::temp_directory_path() / "kgym-serve-journal3.log").string());
  EXPECT_NE(third_log.find("8 answers kept (0 sent again to their ZeroMQ client), 0 unfinished"), std::string::npos)
      << third_log;
  EXPECT_EQ(stop_process(third.pid), 0);
  fs::remove_all(state);
  fs::remove(port_file);
}

// Killed in the middle of an endless evaluation, serve leaves nothing of it running: its zygote
// gets its parent-death signal (or sees the command pipe close) and kills the evaluation's
// processes (before, it died with serve and the candidate spun on until RLIMIT_CPU, half an
// hour of a core).
TEST(ServeApi, AKilledServerLeavesNoEvaluationRunning) {
  EvalRequest endless = request("endless", "gelu_scale_residual", "fused");
  endless.set_candidate_source(endless.candidate_source() + R"(
import os


class ModelNew(ModelNew):
    def __init__(self, scale):
        super().__init__(scale)
        if os.fork() == 0:  # the marker: in the candidate's process tree while it lives
            os.execvp("sleep", ["sleep", "31337.27"])

    def forward(self, x):
        while True:
            pass
)");
  endless.mutable_options()->set_correctness_timeout_s(600);
  endless.mutable_options()->set_total_timeout_s(1200);
  server s = start_server("orphans", {"--executors", "1"});
  client c(s.endpoint);
  c.send(endless);
  auto marker_alive_after = [](bool wanted, std::chrono::seconds within) {  // polls until `wanted`
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (process_with_argument("31337.27") != wanted && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100ms);
    return process_with_argument("31337.27");
  };
  ASSERT_TRUE(marker_alive_after(true, 90s)) << "the candidate never started";
  std::this_thread::sleep_for(1s);  // its forward spinning
  ::kill(s.pid, SIGKILL);
  wait_exit(s.pid);
  EXPECT_FALSE(marker_alive_after(false, 10s)) << "the evaluation outlived the killed server";
}

// An answer handed to ZeroMQ is journaled as delivered only after its grace (2 s): a server
// SIGKILLed within it delivers the answer again after its restart, to the client's routing id;
// one killed after it does not.
TEST(ServeApi, AnAnswerSentJustBeforeASigkillIsDeliveredAgain) {
  const std::string state = (fs::temp_directory_path() / ("kgym-grace-" + std::to_string(::getpid()))).string();
  fs::remove_all(state);
  const std::string me = "grace-client-" + std::to_string(::getpid());
  const EvalRequest within = request("within-grace", "gelu_scale_residual", "fused");
  const EvalRequest after = request("after-grace", "softmax_rows", "wrong");
  {
    server first = start_server("grace1", {"--executors", "1", "--state-dir", state});
    client c(first.endpoint, me);
    c.send(within);
    EXPECT_EQ(c.receive(120s).request_id(), "within-grace");
    // Several of the serve loop's commits later (one a turn, 0.2 s at most when idle), but
    // within the grace: the delivery mark is not in the journal yet.
    std::this_thread::sleep_for(800ms);
    ::kill(first.pid, SIGKILL);
    wait_exit(first.pid);
  }
  {
    server second = start_server("grace2", {"--executors", "1", "--state-dir", state});
    client c(second.endpoint, me);
    EvalResult again = c.receive(30s);
    EXPECT_EQ(again.request_id(), "within-grace");
    EXPECT_EQ(Verdict_Name(again.result().verdict()), "OK");
    c.send(after);
    EXPECT_EQ(c.receive(120s).request_id(), "after-grace");
    std::this_thread::sleep_for(3500ms);  // past the grace, and a commit after it
    ::kill(second.pid, SIGKILL);
    wait_exit(second.pid);
  }
  server third = start_server("grace3", {"--executors", "0", "--state-dir", state});
  client c(third.endpoint, me);
  EXPECT_FALSE(c.message_within(3000ms)) << "an answer delivered before the kill came again";
  EXPECT_EQ(stop_process(third.pid), 0);
  fs::remove_all(state);
}

}  // namespace
}  // namespace kgym::test

// A program a test started and left running (an ASSERT returned before its stop_process) is
// stopped when that test ends, so nothing it started outlives the test binary.
namespace kgym::test {
namespace {
pid_t left_running = 0;

TEST(TestSupport, AProgramLeftRunningIsStartedHere) {
  left_running = start_program({"sleep", "600"});
  ASSERT_GT(left_running, 0);
  EXPECT_EQ(::waitpid(left_running, nullptr, WNOHANG), 0) << "it should still run here";
}

TEST(TestSupport, AndIsGoneOnceThatTestEnded) {
  ASSERT_GT(left_running, 0) << "run with the test before";
  EXPECT_EQ(::waitpid(left_running, nullptr, WNOHANG), -1) << "still running, or not yet collected";
  EXPECT_EQ(errno, ECHILD);
}
}  // namespace
}  // namespace kgym::test
