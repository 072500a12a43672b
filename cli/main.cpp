// kgym: one binary, one subcommand per job.
#include <csignal>
#include <iostream>
#include <map>
#include <stdexcept>

#include "cli/commands.hpp"

namespace {

const char* main_help = R"(kgym — an RL gym for LLMs that write GPU kernels (KernelBench tasks, Triton answers)

usage: kgym COMMAND [options]      (kgym COMMAND --help for each)

commands:
  check    evaluate candidate answers for one task in the sandbox (correctness, speed, hacking)
  tasks    list a task directory (default: the built-in suite under tasks/)
  train    train the embedded policy with multi-turn RL through the actor pipeline (the main job)
  report   a training run's metrics as a table and a plot (PNG)
  top      a live view of a running training's episodes
  web      a training run in the browser: curves, episodes, each turn (live while it trains)
  serve    the evaluation API for RL frameworks (ZeroMQ) and the control plane workers join
  worker   add this node's GPUs or CPU slots to a running kgym serve
  eval     a policy on a task suite (or KernelBench levels) with N turns: Fast@1, Fast@1.2, hacks

Each candidate runs in a fresh, confined process forked from a pre-imported PyTorch+Triton
parent; the executor owns every time limit and always answers with a verdict.
)";

}  // namespace

int main(int argc, char** argv) {
  // A peer that closes its end (an inference server, a worker, a client) is an error on that
  // connection, not the end of kgym: without this, a TLS write to a closed socket killed it.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << main_help;
    return args.empty() ? 2 : 0;
  }
  const std::map<std::string, int (*)(const std::vector<std::string>&)> commands = {
      {"check", kgym::cli::run_check},
      {"tasks", kgym::cli::run_tasks},
      {"train", kgym::cli::run_train},
      {"report", kgym::cli::run_report},
      {"top", kgym::cli::run_top},
      {"serve", kgym::cli::run_serve},
      {"worker", kgym::cli::run_worker},
      {"eval", kgym::cli::run_eval},
      {"web", kgym::cli::run_web},
  };
  auto it = commands.find(args[0]);
  if (it == commands.end()) {
    std::cerr << "kgym: unknown command '" << args[0] << "' (kgym --help lists them)\n";
    return 2;
  }
  try {
    return it->second(std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const std::exception& e) {
    std::cerr << "kgym " << args[0] << ": " << e.what() << "\n";
    return 2;
  }
}
