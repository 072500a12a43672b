// `kgym train` as a user runs it: real sandboxes on the CPU, a SIGKILL in the middle, a
// resume that loses no finished episode; `kgym top` against the live run; `kgym report`;
// and the learning itself (seeded): reward and Fast@1.2 rise, cheating falls, and without
// the hacking check cheating is no longer driven out.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "messages/json.hpp"
#include "pipeline/episode_store.hpp"
#include "pipeline/run_dir.hpp"

namespace kgym {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("kgym-e2e-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  return dir.string();
}

pid_t start(const std::vector<std::string>& args) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run(const std::vector<std::string>& args) { return wait_exit(start(args)); }

std::string output_of(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  char buffer[4096];
  while (pipe && fgets(buffer, sizeof buffer, pipe))
    out += buffer;
  if (pipe)
    ::pclose(pipe);
  return out;
}

std::vector<std::string> train_args(const std::string& dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {KGYM_BINARY, "train", "--run-dir", dir, "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(TrainEndToEnd, ResumesAfterSigkillWithoutLosingAFinishedEpisode) {
  std::string dir = fresh_dir("resume");
  // No evaluation cache: every turn is a real sandboxed evaluation, so the run lasts long
  // enough to be killed in the middle. 3 iterations x 2 tasks x 2 episodes x 2 turns.
  pid_t pid = start(train_args(dir, {"--iterations", "3", "--group-size", "2", "--turns", "2", "--task",
                                     "gelu_scale_residual", "--task", "rmsnorm_rows", "--no-eval-cache"}));
  auto deadline = std::chrono::steady_clock::now() + 240s;
  std::string top;
  while (read_episodes(run_dir::episodes_path(dir)).episodes.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    if (top.empty() && fs::exists(run_dir::monitor_port_path(dir)))
      top = output_of(std::string(KGYM_BINARY) + " top " + dir + " --once 2>&1");
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
  auto before = read_episodes(run_dir::episodes_path(dir)).episodes;
  ASSERT_GE(before.size(), 3u) << "the run stored too few episodes before the deadline";
  ASSERT_LT(before.size(), 12u) << "the run finished before it could be killed";
  EXPECT_NE(top.find("episode"), std::string::npos) << top;  // kgym top reached the live monitor
  EXPECT_NE(top.find("it0/"), std::string::npos) << top;
  EXPECT_NE(top.find("elapsed"), std::string::npos) << top;  // each episode's age (EpisodeStatus.elapsed_s)

  ASSERT_EQ(run({KGYM_BINARY, "train", "--resume", dir, "--quiet"}), 0);
  auto after = read_episodes(run_dir::episodes_path(dir));
  EXPECT_FALSE(after.truncated);
  std::map<std::string, Episode> stored;
  for (const auto& e : after.episodes)
    EXPECT_TRUE(stored.emplace(e.episode_id(), e).second) << "duplicate " << e.episode_id();
  EXPECT_EQ(stored.size(), 12u);
  for (const auto& e : before)  // every episode finished before the kill is kept as it was
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(stored[e.episode_id()], e)) << e.episode_id();
  for (const auto& e : after.episodes) {
    EXPECT_EQ(e.turns_size(), 2);
    for (const auto& t : e.turns())
      EXPECT_NE(t.result().verdict(), INTERNAL_ERROR) << e.episode_id() << ": " << t.result().message();
  }
  auto metrics = run_dir::read_metrics(dir);
  ASSERT_EQ(metrics.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(metrics[i].iteration(), i);
  EXPECT_EQ(run_dir::latest_checkpoint(dir)->version(), 3);
  EXPECT_FALSE(fs::exists(run_dir::monitor_port_path(dir)));

  std::string report = output_of(std::string(KGYM_BINARY) + " report " + dir);
  EXPECT_NE(report.find("fast@1.2"), std::string::npos) << report;
  std::string png = dir + "/curves.png";
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 1000u);
  fs::remove_all(dir);
}

double mean_of(const std::vector<IterationMetrics>& lines, size_t from, size_t to,
               double (IterationMetrics::*field)() const) {
  double sum = 0;
  for (size_t i = from; i < to; ++i)
    sum += (lines[i].*field)();
  return sum / static_cast<double>(to - from);
}

TEST(TrainEndToEnd, TheEmbeddedPolicyLearns) {
  const std::vector<std::string> suite = {"--iterations", "20", "--group-size", "8", "--seed", "7",
                                          "--task", "gelu_scale_residual", "--task", "rmsnorm_rows",
                                          "--task", "layernorm_rows", "--task", "matmul_bias_relu",
                                          "--task", "mse_loss"};
  std::string checked = fresh_dir("learn"), unchecked = fresh_dir("nocheck");
  ASSERT_EQ(run(train_args(checked, suite)), 0);
  auto with_check = run_dir::read_metrics(checked);
  ASSERT_EQ(with_check.size(), 20u);
  using M = IterationMetrics;
  // The first 3 iterations against the last 5.
  EXPECT_GT(mean_of(with_check, 15, 20, &M::mean_reward), mean_of(with_check, 0, 3, &M::mean_reward) + 0.3);
  EXPECT_GT(mean_of(with_check, 15, 20, &M::fast1_2_last), mean_of(with_check, 0, 3, &M::fast1_2_last) + 0.1);
  EXPECT_LT(mean_of(with_check, 15, 20, &M::cheat_share), mean_of(with_check, 0, 3, &M::cheat_share) - 0.1);
  EXPECT_LT(mean_of(with_check, 15, 20, &M::hack_rate), 0.05);

  // kgym eval of the trained checkpoint against the untrained policy, same tasks and seed.
  auto eval = [&](const std::string& out, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {KGYM_BINARY, "eval", "--out", out, "--quiet", "--turns", "1", "--samples", "6"};
    args.insert(args.end(), suite.begin() + 4, suite.end());  // the seed and the tasks
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(run(args), 0);
    EvalReport report;
    EXPECT_EQ(from_json(output_of("cat " + out + "/eval.json"), &report), "");
    return report;
  };
  std::string trained_dir = fresh_dir("eval-trained"), untrained_dir = fresh_dir("eval-untrained");
  EvalReport trained = eval(trained_dir, {"--checkpoint", checked});
  EvalReport untrained = eval(untrained_dir, {});
  EXPECT_EQ(trained.samples(), 6);
  EXPECT_LT(trained.hack_rate(), untrained.hack_rate() - 0.1);
  EXPECT_GT(trained.fast1_2_last(), untrained.fast1_2_last() + 0.1);
  fs::remove_all(trained_dir);
  fs::remove_all(untrained_dir);

  auto args = suite;
  args.push_back("--no-hacking-check");
  ASSERT_EQ(run(train_args(unchecked, args)), 0);
  auto without_check = run_dir::read_metrics(unchecked);
  ASSERT_EQ(without_check.size(), 20u);
  // Cheating is no longer judged: it earns rewards, and the policy keeps cheating where, judged,
  // it unlearned it (on this machine, seed 7: the cheat share stays at 0.25-0.3 without the check
  // and falls to about 0.01 with it). Its first iterations against its last: 40 episodes an
  // iteration make one iteration's share move by about 0.04, so "keeps" allows that much.
  EXPECT_GT(mean_of(without_check, 15, 20, &M::cheat_share), mean_of(without_check, 0, 3, &M::cheat_share) - 0.05);
  EXPECT_GT(mean_of(without_check, 15, 20, &M::cheat_share), mean_of(with_check, 15, 20, &M::cheat_share) + 0.15);
  fs::remove_all(checked);
  fs::remove_all(unchecked);
}

}  // namespace
}  // namespace kgym
