// `kgym train --policy openai` against a real HTTP server that speaks the OpenAI protocol
// (tests/fakes/openai_server.py, scripted answers): retries after a 500, a slow answer past
// the timeout, malformed JSON, a 400 that is not retried, an answer with no code block, one
// with two blocks (the last counts), a wrong program; each turn ends with the right verdict
// and feedback, the run completes, the request carries what the protocol asks, and no more
// requests than the concurrency limit are in flight.
#include <google/protobuf/struct.pb.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "api_support.hpp"
#include "messages/json.hpp"
#include "pipeline/episode_store.hpp"
#include "test_support.hpp"

namespace kgym {
namespace {

namespace fs = std::filesystem;

std::string fenced(const std::string& source) { return "```python\n" + source + "```\n"; }

std::string json_string(const std::string& text) {
  google::protobuf::Value v;
  v.set_string_value(text);
  return to_json(v);
}

std::string candidate(const std::string& task, const std::string& name) {
  return test::read_text(test::source_path("tasks/" + task + "/candidates/" + name + ".py"));
}

struct fake_server {
  pid_t pid;
  std::string url;
  std::string log;
  ~fake_server() { test::stop_process(pid); }
};

// `tls_dir`: serve https with a certificate for 127.0.0.1 made there (deploy/cluster_certs.sh;
// its CA in tls_dir/ca.pem).
std::unique_ptr<fake_server> start_fake(const std::string& dir, const std::string& script,
                                        const std::string& tls_dir = "") {
  fs::create_directories(dir);
  std::ofstream(dir + "/script.json") << script;
  auto server = std::make_unique<fake_server>();
  server->log = dir + "/requests.jsonl";
  std::vector<std::string> argv = {test::python(), test::source_path("tests/fakes/openai_server.py"), "--script",
                                   dir + "/script.json", "--port-file", dir + "/port", "--log", server->log,
                                   "--fingerprint", "kgym-v7"};
  if (!tls_dir.empty()) {
    EXPECT_EQ(test::wait_exit(test::start_program({"bash", test::source_path("deploy/cluster_certs.sh"), tls_dir,
                                                   "127.0.0.1"},
                                                  dir + "/certs.log")),
              0);
    argv.insert(argv.end(), {"--tls-cert", tls_dir + "/127.0.0.1/node.pem", "--tls-key", tls_dir + "/127.0.0.1/node.key"});
  }
  server->pid = test::start_program(argv, dir + "/server.log");
  std::string port = test::wait_for_line(dir + "/port");
  server->url = (tls_dir.empty() ? "http" : "https") + std::string("://127.0.0.1:") + port + "/v1";
  return server;
}

// Requests the fake logged, by "<task>/<turn>".
std::map<std::string, std::vector<google::protobuf::Struct>> logged(const std::string& path) {
  std::map<std::string, std::vector<google::protobuf::Struct>> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    google::protobuf::Struct entry;
    EXPECT_EQ(from_json(line, &entry), "");
    out[entry.fields().at("key").string_value()].push_back(entry);
  }
  return out;
}

std::map<std::string, Episode> episodes_of(const std::string& run) {
  std::map<std::string, Episode> out;
  for (auto& e : read_episodes(run + "/episodes.pb").episodes)
    out[e.task_id()] = e;
  return out;
}

TEST(OpenAIPolicy, ScriptedServerFailuresBecomeTurnsWithTheRightFeedback) {
  std::string dir = (fs::temp_directory_path() / ("kgym-openai-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  std::string gelu_fused = candidate("gelu_scale_residual", "fused");
  std::string row_fused = candidate("row_sum", "fused");
  std::ostringstream script;
  script << "{\"gelu_scale_residual/1\": [{\"status\": 500, \"delay_s\": 0.5}, {\"answer\": "
         << json_string("Fused it:\n" + fenced(gelu_fused)) << "}],"
         << "\"gelu_scale_residual/2\": [{\"answer\": \"The kernel is already optimal; no changes needed.\"}],"
         << "\"gelu_scale_residual/3\": [{\"malformed\": true}],"
         << "\"rmsnorm_rows/1\": [{\"delay_s\": 2.5, \"answer\": \"too late\"}],"
         << "\"rmsnorm_rows/2\": [{\"answer\": " << json_string(fenced(candidate("rmsnorm_rows", "wrong"))) << "}],"
         << "\"rmsnorm_rows/3\": [{\"answer\": " << json_string(fenced(candidate("rmsnorm_rows", "fused"))) << "}],"
         << "\"row_sum/1\": [{\"status\": 500, \"delay_s\": 0.5}],"
         << "\"row_sum/2\": [{\"status\": 400}],"
         << "\"row_sum/3\": [{\"answer\": "
         << json_string("A first try:\n```python\nprint('draft')\n```\nThe final program:\n" + fenced(row_fused)) << "}]}";
  auto server = start_fake(dir, script.str());
  ASSERT_NE(server->url, "http://127.0.0.1:/v1") << "the fake server did not start: " << test::read_text(dir + "/server.log");

  std::ofstream(dir + "/config.json") << R"({"openai": {"timeout_s": 1, "retries": 1, "backoff_s": 0.1, "concurrency": 2,
                                             "api_key_env": "KGYM_TEST_OPENAI_KEY", "max_tokens": 2048}})";
  ::setenv("KGYM_TEST_OPENAI_KEY", "sekret", 1);
  std::string run = dir + "/run";
  pid_t train = test::start_kgym({"train", "--config", dir + "/config.json", "--run-dir", run, "--policy", "openai",
                                  "--openai-url", server->url, "--model", "scripted", "--task", "gelu_scale_residual",
                                  "--task", "rmsnorm_rows", "--task", "row_sum", "--group-size", "1", "--turns", "3",
                                  "--iterations", "1", "--quiet"},
                                 dir + "/train.out");
  ASSERT_EQ(test::wait_exit(train), 0) << test::read_text(dir + "/train.out");

  auto episodes = episodes_of(run);
  ASSERT_EQ(episodes.size(), 3u);
  for (const auto& [task, e] : episodes)
    ASSERT_EQ(e.turns_size(), 3) << task;

  // A 500, then an answer: the retry's answer is the turn; tokens, log-probs, version recorded.
  const Episode& gelu = episodes["gelu_scale_residual"];
  EXPECT_EQ(gelu.turns(0).result().verdict(), OK) << gelu.turns(0).result().message();
  size_t pieces = (std::string("Fused it:\n" + fenced(gelu_fused)).size() + 3) / 4;
  ASSERT_EQ(gelu.turns(0).token_ids_size(), static_cast<int>(pieces));
  EXPECT_EQ(gelu.turns(0).token_ids(0), 1000);
  ASSERT_EQ(gelu.turns(0).rollout_logprobs_size(), static_cast<int>(pieces));
  EXPECT_DOUBLE_EQ(gelu.turns(0).rollout_logprobs(0), -0.5);
  EXPECT_EQ(gelu.turns(0).prompt_token_ids_size(), 3);
  EXPECT_EQ(gelu.turns(0).policy_version(), 7);  // from the server's system_fingerprint
  // No code block: a compile error whose message says so, shown in the next prompt.
  EXPECT_EQ(gelu.turns(1).result().verdict(), COMPILE_ERROR);
  EXPECT_NE(gelu.turns(1).result().message().find("no fenced code block"), std::string::npos);
  EXPECT_NE(gelu.turns(2).prompt().find("verdict: COMPILE_ERROR"), std::string::npos);
  EXPECT_NE(gelu.turns(2).prompt().find("verdict: OK"), std::string::npos);
  // Malformed JSON: kgym's side of the turn failed, with a message naming it; no reward signal.
  EXPECT_EQ(gelu.turns(2).result().verdict(), INTERNAL_ERROR);
  EXPECT_NE(gelu.turns(2).result().message().find("not the OpenAI JSON"), std::string::npos);
  EXPECT_FALSE(gelu.turns(2).reward().valid());

  // Slower than the timeout on every attempt; then a wrong program; then a right one.
  const Episode& rms = episodes["rmsnorm_rows"];
  EXPECT_EQ(rms.turns(0).result().verdict(), INTERNAL_ERROR);
  EXPECT_NE(rms.turns(0).result().message().find("no complete answer within"), std::string::npos)
      << rms.turns(0).result().message();
  EXPECT_EQ(rms.turns(1).result().verdict(), INCORRECT);
  EXPECT_NE(rms.turns(2).prompt().find("verdict: INCORRECT"), std::string::npos);
  EXPECT_EQ(rms.turns(2).result().verdict(), OK) << rms.turns(2).result().message();

  // 500 on every attempt; a 400 (not retried); two code blocks (the last one is the program).
  const Episode& rows = episodes["row_sum"];
  EXPECT_EQ(rows.turns(0).result().verdict(), INTERNAL_ERROR);
  EXPECT_NE(rows.turns(0).result().message().find("HTTP 500"), std::string::npos);
  EXPECT_EQ(rows.turns(1).result().verdict(), INTERNAL_ERROR);
  EXPECT_NE(rows.turns(1).result().message().find("HTTP 400"), std::string::npos);
  EXPECT_EQ(rows.turns(2).result().verdict(), OK) << rows.turns(2).result().message();

  auto requests = logged(server->log);
  double most_in_flight = 0;  // 3 episodes ask at once; the backend lets 2 through
  for (const auto& [key, list] : requests)
    for (const auto& r : list)
      most_in_flight = std::max(most_in_flight, r.fields().at("in_flight").number_value());
  EXPECT_EQ(most_in_flight, 2);
  EXPECT_EQ(requests["gelu_scale_residual/1"].size(), 2u);  // the 500, then the retry
  EXPECT_EQ(requests["rmsnorm_rows/1"].size(), 2u);         // 1 + retries
  EXPECT_EQ(requests["row_sum/1"].size(), 2u);
  EXPECT_EQ(requests["row_sum/2"].size(), 1u);              // 4xx: the request itself is wrong
  const auto& first = requests["gelu_scale_residual/1"].front().fields();
  EXPECT_EQ(first.at("authorization").string_value(), "Bearer sekret");
  const auto& body = first.at("body").struct_value().fields();
  EXPECT_EQ(body.at("model").string_value(), "scripted");
  EXPECT_TRUE(body.at("logprobs").bool_value());
  EXPECT_TRUE(body.at("return_token_ids").bool_value());
  EXPECT_EQ(body.at("max_tokens").number_value(), 2048);
  EXPECT_EQ(body.at("temperature").number_value(), 1.0);
  const auto& messages = body.at("messages").list_value();
  ASSERT_EQ(messages.values_size(), 2);
  EXPECT_EQ(messages.values(0).struct_value().fields().at("role").string_value(), "system");
  EXPECT_NE(messages.values(1).struct_value().fields().at("content").string_value().find("## Task gelu_scale_residual"),
            std::string::npos);

  // The plain completions endpoint: same turn, log-probs from its own format.
  std::string run2 = dir + "/run2";
  pid_t again = test::start_kgym({"train", "--run-dir", run2, "--policy", "openai", "--openai-url", server->url,
                                  "--model", "scripted", "--api", "completions", "--task", "gelu_scale_residual",
                                  "--group-size", "1", "--turns", "1", "--iterations", "1", "--quiet"},
                                 dir + "/train2.out");
  ASSERT_EQ(test::wait_exit(again), 0) << test::read_text(dir + "/train2.out");
  auto second = episodes_of(run2);
  const Turn& t = second["gelu_scale_residual"].turns(0);
  EXPECT_EQ(t.result().verdict(), OK) << t.result().message();
  EXPECT_EQ(t.token_ids_size(), static_cast<int>(pieces));
  EXPECT_EQ(t.rollout_logprobs_size(), static_cast<int>(pieces));
  EXPECT_EQ(logged(server->log)["gelu_scale_residual/1"].back().fields().at("path").string_value(), "/v1/completions");
}

// A KernelBench-layout checkout (KernelBench/levelN/<n>_<name>.py), made from built-in tasks
// at their CPU sizes.
void write_kernelbench_task(const std::string& root, int level, const std::string& file, const std::string& task,
                            const std::map<std::string, std::string>& sizes) {
  std::string source = test::read_text(test::source_path("tasks/" + task + "/task.py"));
  std::string out;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    for (const auto& [name, value] : sizes)
      if (line.rfind(name + " = ", 0) == 0)
        line = name + " = " + value;
    out += line + "\n";
  }
  std::string dir = root + "/KernelBench/level" + std::to_string(level);
  fs::create_directories(dir);
  std::ofstream(dir + "/" + file) << out;
}

TEST(OpenAIPolicy, EvalOnKernelBenchLevelsWritesTheReport) {
  std::string dir = (fs::temp_directory_path() / ("kgym-openai-eval-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  std::string checkout = dir + "/kb";
  write_kernelbench_task(checkout, 1, "1_gelu_scale_residual.py", "gelu_scale_residual",
                         {{"batch_size", "64"}, {"dim", "1024"}});
  write_kernelbench_task(checkout, 2, "2_row_sum.py", "row_sum", {{"batch_size", "4"}, {"dim1", "256"}, {"dim2", "128"}});
  std::ostringstream script;
  script << "{\"1_gelu_scale_residual/1\": [{\"answer\": " << json_string(fenced(candidate("gelu_scale_residual", "wrong")))
         << "}], \"1_gelu_scale_residual/2\": [{\"answer\": " << json_string(fenced(candidate("gelu_scale_residual", "fused")))
         << "}], \"2_row_sum/1\": [{\"answer\": " << json_string(fenced(candidate("row_sum", "cheat")))
         << "}], \"2_row_sum/2\": [{\"answer\": \"Nothing to change.\"}]}";
  // Over https (the kgym binary's TLS guard must leave this connection alone), the server's
  // certificate trusted through SSL_CERT_FILE.
  auto server = start_fake(dir, script.str(), dir + "/tls");
  ASSERT_EQ(server->url.rfind("https://", 0), 0u);
  ::setenv("SSL_CERT_FILE", (dir + "/tls/ca.pem").c_str(), 1);

  std::vector<std::string> common = {"eval", "--policy", "openai", "--openai-url", server->url, "--model", "scripted",
                                     "--kernelbench", checkout, "--turns", "2", "--quiet"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> all = common;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  EXPECT_EQ(test::wait_exit(test::start_kgym(with({"--level", "3", "--out", dir + "/none"}), dir + "/bad.out")), 2);
  EXPECT_NE(test::read_text(dir + "/bad.out").find("no KernelBench level 3"), std::string::npos);
  // Nothing listening there: refused at once, with what to do (not a run of failed turns).
  EXPECT_EQ(test::wait_exit(test::start_kgym({"eval", "--policy", "openai", "--openai-url", "http://127.0.0.1:1/v1",
                                              "--out", dir + "/none"},
                                             dir + "/down.out")),
            2);
  EXPECT_NE(test::read_text(dir + "/down.out").find("cannot reach the model server"), std::string::npos)
      << test::read_text(dir + "/down.out");
  EXPECT_FALSE(fs::exists(dir + "/none"));

  std::string out = dir + "/eval";
  ASSERT_EQ(test::wait_exit(test::start_kgym(with({"--level", "1", "--level", "2", "--out", out}), dir + "/eval.out")), 0)
      << test::read_text(dir + "/eval.out");
  EvalReport report;
  ASSERT_EQ(from_json(test::read_text(out + "/eval.json"), &report), "");
  EXPECT_EQ(report.tasks(), 2);
  EXPECT_EQ(report.policy(), OPENAI);
  EXPECT_EQ(report.model(), "scripted");
  ASSERT_EQ(report.per_turn_size(), 2);
  EXPECT_DOUBLE_EQ(report.per_turn(0).fast1(), 0.0);    // wrong, hacked
  EXPECT_DOUBLE_EQ(report.per_turn(0).hacked(), 0.5);
  EXPECT_DOUBLE_EQ(report.per_turn(1).correct(), 0.5);  // fused, no code
  EXPECT_DOUBLE_EQ(report.per_turn(1).fast1_2(), 0.5);  // the fused GELU is modeled well above 1.2x
  EXPECT_DOUBLE_EQ(report.per_turn(1).hacked(), 0.0);
  EXPECT_DOUBLE_EQ(report.fast1_2_best(), 0.5);
  EXPECT_DOUBLE_EQ(report.hack_rate(), 0.25);
  EXPECT_NE(test::read_text(out + "/eval.md").find("| 1_gelu_scale_residual | 1 |"), std::string::npos);
  EXPECT_EQ(test::read_text(out + "/eval.png").substr(1, 3), "PNG");
  EXPECT_FALSE(fs::exists(out + "/metrics.jsonl"));  // an evaluation is not a training run
  ::unsetenv("SSL_CERT_FILE");
}

}  // namespace
}  // namespace kgym
