// kgym train with a real (tiny, random-weight) causal LM: served over the OpenAI protocol by
// deploy/trainer/serve_model.py, updated by deploy/trainer/reference_trainer.py over ZeroMQ.
// The run completes; each iteration's rollouts come from the version the trainer made before
// it (the server reloaded it); MRS compared two real sets of log-probs (the server's, the
// trainer's); the weights changed. Needs the trainer's Python (torch + transformers):
// $KGYM_TRAINER_PYTHON, set up by deploy/setup.sh.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "api_support.hpp"
#include "messages/json.hpp"
#include "pipeline/episode_store.hpp"
#include "test_support.hpp"

namespace kgym {
namespace {

namespace fs = std::filesystem;

struct process_guard {
  pid_t pid;
  ~process_guard() { test::stop_process(pid); }
};

TEST(LlmTrain, TinyServedModelIsTrainedByTheReferenceTrainer) {
  const char* python = std::getenv("KGYM_TRAINER_PYTHON");
  if (!python || !fs::exists(python))
    GTEST_SKIP() << "no trainer Python (torch + transformers) at $KGYM_TRAINER_PYTHON; bash deploy/setup.sh makes one";
  std::string dir = (fs::temp_directory_path() / ("kgym-llm-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string scripts = test::source_path("deploy/trainer");
  std::string model = dir + "/model";
  ASSERT_EQ(test::wait_exit(test::start_program({python, scripts + "/make_tiny_model.py", model}, dir + "/make.log")), 0)
      << test::read_text(dir + "/make.log");

  process_guard server{test::start_program(
      {python, scripts + "/serve_model.py", model, "--port", "0", "--port-file", dir + "/port", "--device", "cpu"},
      dir + "/server.log")};
  process_guard trainer{test::start_program({python, scripts + "/reference_trainer.py", model, "--out-dir",
                                             dir + "/weights", "--endpoint", "tcp://127.0.0.1:*", "--endpoint-file",
                                             dir + "/endpoint", "--lr", "3e-3", "--device", "cpu"},
                                            dir + "/trainer.log")};
  std::string port = test::wait_for_line(dir + "/port", std::chrono::seconds(120));
  std::string endpoint = test::wait_for_line(dir + "/endpoint", std::chrono::seconds(120));
  ASSERT_FALSE(port.empty()) << test::read_text(dir + "/server.log");
  ASSERT_FALSE(endpoint.empty()) << test::read_text(dir + "/trainer.log");

  // Strictly on-policy (lag 0): iteration 2's rollouts must come from version 1.
  std::ofstream(dir + "/config.json") << R"({"max_policy_lag": 0, "openai": {"max_tokens": 32, "concurrency": 4}})";
  std::string run = dir + "/run";
  pid_t train = test::start_kgym({"train", "--config", dir + "/config.json", "--run-dir", run, "--policy", "openai",
                                  "--openai-url", "http://127.0.0.1:" + port + "/v1", "--trainer", endpoint,
                                  "--task", "gelu_scale_residual", "--task", "row_sum", "--group-size", "4", "--turns",
                                  "2", "--iterations", "2", "--quiet"},
                                 dir + "/train.out");
  ASSERT_EQ(test::wait_exit(train), 0) << test::read_text(dir + "/train.out") << test::read_text(run + "/train.log");

  auto episodes = read_episodes(run + "/episodes.pb").episodes;
  ASSERT_EQ(episodes.size(), 16u);
  for (const auto& e : episodes)
    for (const auto& t : e.turns()) {
      EXPECT_EQ(t.policy_version(), e.iteration()) << e.episode_id() << " was sampled by another version";
      ASSERT_GT(t.token_ids_size(), 0) << e.episode_id();
      EXPECT_EQ(t.rollout_logprobs_size(), t.token_ids_size());
      EXPECT_GT(t.prompt_token_ids_size(), 100);  // the server's tokenization of system + task
    }

  std::ifstream lines(run + "/metrics.jsonl");
  std::vector<IterationMetrics> metrics;
  for (std::string line; std::getline(lines, line);) {
    IterationMetrics m;
    ASSERT_EQ(from_json(line, &m), "");
    metrics.push_back(m);
  }
  ASSERT_EQ(metrics.size(), 2u);
  for (const auto& m : metrics) {
    EXPECT_EQ(m.policy_version(), m.iteration() + 1);  // the trainer answered each update
    // Same weights, two computations (the server's cached decoding, the trainer's full pass).
    EXPECT_LT(m.mean_abs_log_ratio(), 1e-3);
    EXPECT_LT(m.mrs_rejected_rate(), 0.25);
  }
  std::string log = test::read_text(run + "/train.log");
  EXPECT_NE(log.find("the server now serves version 1"), std::string::npos);
  EXPECT_NE(test::read_text(dir + "/trainer.log").find("-> version 2"), std::string::npos);
  EXPECT_NE(test::read_text(dir + "/weights/v2/model.safetensors"), test::read_text(model + "/model.safetensors"));
}

}  // namespace
}  // namespace kgym
