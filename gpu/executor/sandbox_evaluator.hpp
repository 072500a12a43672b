// Evaluates one candidate in the sandbox and always answers with a verdict, whatever the
// candidate does: the executor owns every time limit, the memory watchdog and every kill.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/executor/cancellations.hpp"
#include "gpu/executor/extension_builder.hpp"
#include "gpu/executor/sandbox_process.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

// What one request may cost an executor at most, by default: the scheduler's deadline for a
// placed request (actors/scheduler.hpp) is built from these too.
constexpr std::chrono::seconds default_start_timeout{180};
constexpr int default_own_memory_attempts = 3;
// Evaluations whose processes the zygote keeps prepared: the next one warms up while this one
// runs, the one after between this one's timing and the next one's, so no CUDA start-up
// overlaps a timing (which would wait for it).
constexpr std::size_t prepared_evaluations = 2;

struct executor_options {
  sandbox_launch launch;
  std::string work_root;  // per-evaluation private directories are made below it
  std::chrono::seconds start_timeout = default_start_timeout;
  std::chrono::seconds exit_grace{15};  // after a kill, how long to wait for the exit report
  std::string trace_archive;  // if set, each trace is copied here as <request_id>.jsonl (+ .key; <id>~2 ... where taken)
  // Evaluations of one request while kgym's own processes run out of GPU memory
  // (ExecResult.own_device_memory_exhausted): never the candidate's verdict.
  int own_memory_attempts = default_own_memory_attempts;
  // Candidates' CUDA extensions, built ahead of their evaluation (empty: under work_root,
  // gone with it).
  std::string extension_cache;
  // Requests withdrawn by their client: stopped at the next watchdog tick, or never started.
  std::shared_ptr<cancellations> withdrawn = std::make_shared<cancellations>();
};


class sandbox_evaluator {
 public:
  explicit sandbox_evaluator(executor_options options);
  ~sandbox_evaluator();
  // Evaluates again, after a pause, while kgym's own processes ran out of GPU memory. A
  // candidate's CUDA extensions are built first, unless `prebuilt` says what was built for
  // it (the executor builds ahead, on other cores: actors/gpu_executor).
  ExecResult evaluate(const ExecRequest& request, const SandboxEvent::Built* prebuilt = nullptr);
  // The same, up to the trace: the result as the device left it and the candidate's trace,
  // not yet ruled on (rule_on_trace, gpu/executor/trace_ruling.hpp: the profiler actor's work,
  // while this evaluator's device moves on).
  std::pair<ExecResult, CandidateTrace> evaluate_on_device(const ExecRequest& request,
                                                           const SandboxEvent::Built* prebuilt = nullptr);
  // Starts the zygote now, with the first evaluations' processes prepared at once, so the
  // first request does not wait for them (an executor that serves calls it at its start).
  // Returns an error text, empty on success; evaluate() starts it otherwise.
  std::string start();
  const std::string& extension_cache() const { return options_.extension_cache; }
  // How many times the zygote was (re)started: a candidate never costs more than one.
  int zygote_starts() const { return zygote_starts_; }
  pid_t zygote_pid() const { return zygote_ ? zygote_->pid() : -1; }  // -1: none started

 private:
  ExecResult evaluate_once(const ExecRequest& request, const SandboxEvent::Built& built, CandidateTrace* trace);
  std::string ensure_zygote(bool prepare_first = false);
  // Hands `request` to the zygote in a workdir of the prepared ones (or a new one) and reads its
  // started event into `event` (`workdir` says where); an error text, empty on success. A zygote
  // found gone as the command reached it (its pipe closed: nothing of the request ran) is
  // replaced and sent the request once more.
  std::string start_evaluation(const ExecRequest& request, const SandboxEvent::Built& built, std::string* workdir,
                               SandboxEvent* event);
  std::string new_workdir();
  void top_up_prepared();  // prepared_evaluations directories for the next evaluations' processes
  void forget_prepared();
  executor_options options_;
  std::deque<std::string> prepared_workdirs_;  // where the zygote prepares the next evaluations
  bool owns_work_root_ = false;
  std::unique_ptr<sandbox_process> zygote_;
  std::unique_ptr<extension_builder> builder_;  // made when a candidate first needs one
  int zygote_starts_ = 0;
  int serial_ = 0;
};

}  // namespace kgym
