#include "gpu/executor/sandbox_evaluator.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <filesystem>
#include <fstream>

#include "gpu/executor/eval_defaults.hpp"
#include "gpu/executor/process_watch.hpp"
#include "gpu/executor/trace_ruling.hpp"
#include "gpu/executor/workdir.hpp"
#include "gpu/profiler/trace_check.hpp"
#include "gpu/profiler/untrusted_file.hpp"
#include "messages/evidence.hpp"

namespace kgym {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto watchdog_tick = std::chrono::milliseconds(100);
// Files a candidate's private directory may hold where the executor counts its disk by walking
// it (each tick): past this many it is over its limit, whatever their size.
constexpr int64_t max_private_entries = 100000;

double timeout_for(const EvalOptions& o, EvalPhase phase) {
  if (phase == PHASE_CORRECTNESS) return o.correctness_timeout_s();
  if (phase == PHASE_TIMING) return o.timing_timeout_s();
  return o.load_timeout_s();
}

clock_type::time_point phase_deadline(const EvalOptions& o, EvalPhase phase) {
  return clock_type::now() +
         std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(timeout_for(o, phase)));
}

std::string tail_of(const fs::path& file, size_t max_bytes) {
  return read_untrusted_file(file.string(), max_bytes, /*tail=*/true).value_or("");
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

void fail(ExecResult* r, Verdict verdict, EvalPhase phase, const std::string& message) {
  r->set_verdict(verdict);
  r->set_failed_phase(phase);
  r->set_message(message);
  r->set_correct(false);
}

// What the exit of the evaluation process means when it sent no result.
void verdict_from_exit(const SandboxEvent::ChildExit& exit, EvalPhase phase, ExecResult* r) {
  if (exit.signal() == SIGXCPU || exit.signal() == SIGXFSZ)
    fail(r, RESOURCE_LIMIT, phase, "killed by " + signal_name(exit.signal()) + " (CPU time or file size limit)");
  else if (exit.signal() != 0)
    fail(r, CRASHED, phase, "the evaluation process died of " + signal_name(exit.signal()));
  else
    fail(r, CRASHED, phase, "the evaluation process exited with code " + std::to_string(exit.exit_code()) +
                                " without a result");
}

// The judge saw its candidate process vanish; the zygote saw how it ended.
void explain_candidate_exit(const SandboxEvent::ChildExit& exit, ExecResult* r) {
  if (r->verdict() != CRASHED || exit.candidate_signal() == 0)
    return;
  if (exit.candidate_signal() == SIGXCPU || exit.candidate_signal() == SIGXFSZ)
    fail(r, RESOURCE_LIMIT, r->failed_phase(),
         "the candidate process was killed by " + signal_name(exit.candidate_signal()) + " (CPU time or file size limit)");
  else
    fail(r, CRASHED, r->failed_phase(),
         r->message() + " (it died of " + signal_name(exit.candidate_signal()) + ")");
}

// What the candidate printed (most of the budget), then the judge's own log if it wrote one.
// `candidate_dir`: the candidate's directory as the executor sees it (Started.candidate_dir).
std::string evaluation_log(const fs::path& workdir, const fs::path& candidate_dir) {
  std::string log = tail_of(candidate_dir / "sandbox.log", 4096);
  std::string judge = tail_of(workdir / "judge" / "sandbox.log", 1024);
  if (!judge.empty())
    log += (log.empty() || log.back() == '\n' ? "" : "\n") + std::string("[judge]\n") + judge;
  return log;
}

// Keeps the candidate's trace and its key (<name>.jsonl, <name>.key) as test data, and the
// reference runner's (<name>.reference.jsonl; its key is nobody's: its kernels beside the
// candidate's, for bench/identity_kernels.py); '/' in ids becomes '_'.
void archive_trace(const fs::path& workdir, const fs::path& candidate_dir, const std::string& key_hex,
                   const fs::path& archive, std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  std::error_code ignored;
  fs::create_directories(archive, ignored);
  // Request ids restart with each `kgym check`: a name an earlier evaluation took gets a suffix
  // (<id>~2, <id>~3, ...), so no trace in the archive is overwritten.
  const std::string id = name;
  for (int n = 2; fs::exists(archive / (name + ".jsonl"), ignored); ++n)
    name = id + "~" + std::to_string(n);
  auto keep = [&](const fs::path& from, const std::string& as) {  // what the candidate left there, never a link
    std::ofstream(archive / as, std::ios::binary) << read_untrusted_file(from.string(), max_trace_bytes).value_or("");
  };
  keep(candidate_dir / "trace.jsonl", name + ".jsonl");
  std::ofstream(archive / (name + ".key")) << key_hex << "\n";
  keep(workdir / "reference" / "trace.jsonl", name + ".reference.jsonl");
}

// The end of a log (the zygote's own stderr), for kgym's log when the zygote is found gone:
// its file goes with the work root when the evaluator ends.
std::string log_tail(const std::string& path) {
  const auto tail = read_untrusted_file(path, 4000, /*tail=*/true);
  return !tail ? "(no log)" : tail->empty() ? "(empty)" : *tail;
}

// Work roots of kgym processes that were killed before they could clean up.
void remove_stale_work_roots() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "kgym-sandbox-";
    if (name.rfind(prefix, 0) != 0)
      continue;
    pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH)
      remove_workdir(entry.path());
  }
}

// The verdict becomes RESOURCE_LIMIT for a limit the candidate hit; what it was stays in the
// evidence.
void charge_limit(ExecResult* result, EvalPhase phase, const std::string& message, EvidenceKind kind,
                  const std::string& source) {
  const std::string was = Verdict_Name(result->verdict()) + ": " + result->message();
  fail(result, RESOURCE_LIMIT, phase, message);
  add_evidence(result, kind, "then: " + was.substr(0, 300), source);
}

// A candidate that failed with its private disk full failed on the limit, not by itself.
void charge_full_disk(int64_t peak_bytes, int64_t limit_mb, EvalPhase phase, ExecResult* result) {
  const int64_t slack = 64 << 10;  // tmpfs's own bookkeeping: "full" is within a few pages
  const auto v = result->verdict();
  if (peak_bytes < (limit_mb << 20) - slack || !(v == RUNTIME_ERROR || v == CRASHED || v == COMPILE_ERROR))
    return;
  charge_limit(result, phase,
               "its private disk (/tmp, /var/tmp and /dev/shm together) was full: the limit is " +
                   std::to_string(limit_mb) + " MiB",
               DISK_LIMIT, "executor");
}

}  // namespace

sandbox_evaluator::sandbox_evaluator(executor_options options) : options_(std::move(options)) {
  if (options_.work_root.empty()) {
    remove_stale_work_roots();
    // <pid>-<n>: several executors of one process each own a root (atol reads the pid).
    static std::atomic<int> instances{0};
    options_.work_root = (fs::temp_directory_path() / ("kgym-sandbox-" + std::to_string(::getpid()) + "-" +
                                                       std::to_string(++instances)))
                             .string();
    owns_work_root_ = true;
  }
  fs::create_directories(options_.work_root);
  // Traversable by the sandbox uid, not listable: each evaluation sees only its own dir.
  ::chmod(options_.work_root.c_str(), 0711);
  if (options_.launch.log_path.empty())
    options_.launch.log_path = (fs::path(options_.work_root) / "zygote.log").string();
  if (options_.extension_cache.empty())
    options_.extension_cache = (fs::path(options_.work_root) / "extensions").string();
}

sandbox_evaluator::~sandbox_evaluator() {
  zygote_.reset();
  forget_prepared();
  if (owns_work_root_)
    remove_workdir(options_.work_root);
}

std::string sandbox_evaluator::new_workdir() {
  fs::path workdir = fs::path(options_.work_root) / ("eval-" + std::to_string(++serial_));
  remove_workdir(workdir);
  fs::create_directory(workdir);
  ::chmod(workdir.c_str(), 0700);
  return workdir.string();
}

void sandbox_evaluator::top_up_prepared() {
  while (prepared_workdirs_.size() < prepared_evaluations)
    prepared_workdirs_.push_back(new_workdir());
}

void sandbox_evaluator::forget_prepared() {
  for (const auto& workdir : prepared_workdirs_)
    remove_workdir(workdir);
  prepared_workdirs_.clear();
}

std::string sandbox_evaluator::start() { return ensure_zygote(true); }

std::string sandbox_evaluator::ensure_zygote(bool prepare_first) {
  const pid_t was = zygote_ ? zygote_->pid() : -1;
  if (zygote_ && zygote_->running())
    return {};
  if (zygote_)  // it died while idle: the request that comes next gets a new one, not an error
    spdlog::warn("the sandbox zygote (pid {}) was gone while idle; starting a new one; the end of {}:\n{}", was,
                 options_.launch.log_path, log_tail(options_.launch.log_path));
  forget_prepared();  // a new zygote has no prepared process
  if (prepare_first)
    top_up_prepared();
  zygote_ = std::make_unique<sandbox_process>(options_.launch);
  ++zygote_starts_;
  SandboxEvent::Ready ready;
  auto error = zygote_->start(options_.start_timeout, &ready,
                              std::vector<std::string>(prepared_workdirs_.begin(), prepared_workdirs_.end()));
  if (!error.empty())
    forget_prepared();
  else
    spdlog::info("sandbox ready: python {} torch {} triton {} (imports took {:.1f} s)", ready.python(),
                 ready.torch(), ready.triton(), ready.import_s());
  return error;
}

ExecResult sandbox_evaluator::evaluate(const ExecRequest& request, const SandboxEvent::Built* prebuilt) {
  auto [result, trace] = evaluate_on_device(request, prebuilt);
  return rule_on_trace(std::move(result), trace);
}

std::pair<ExecResult, CandidateTrace> sandbox_evaluator::evaluate_on_device(const ExecRequest& request,
                                                                          const SandboxEvent::Built* prebuilt) {
  CandidateTrace trace;
  if (options_.withdrawn->cancelled(request.request_id())) {  // withdrawn before it started: nothing built
    options_.withdrawn->forget(request.request_id());
    ExecResult result = result_for(request);
    fail(&result, CANCELLED, PHASE_START, "withdrawn by its client before it ran");
    return {result, trace};
  }
  SandboxEvent::Built built;
  if (prebuilt) {
    built = *prebuilt;
  } else if (request.device() == CUDA && uses_extensions(request.candidate().source())) {
    if (!builder_)
      builder_ = std::make_unique<extension_builder>(options_.launch, options_.extension_cache, options_.work_root);
    built = builder_->build(request);
  }
  // wall_s is the evaluation's own time; a build's is harness_seconds' extension_build.
  const auto started = clock_type::now();
  ExecResult result = build_failure(request, built);
  if (result.verdict() != VERDICT_UNSPECIFIED)
    return {result, trace};
  bool candidates_every_time = true;  // each shortage met in the candidate's process
  for (int attempt = 1;; ++attempt) {
    trace.Clear();  // the last attempt's is the one ruled on
    result = evaluate_once(request, built, &trace);
    result.set_attempts(attempt);
    candidates_every_time = candidates_every_time && has_evidence(result, CANDIDATE_OUT_OF_DEVICE_MEMORY);
    if (!result.own_device_memory_exhausted() || attempt >= std::max(options_.own_memory_attempts, 1))
      break;
    spdlog::warn("request {}: kgym's own processes ran out of GPU memory ({}); evaluating again ({} of {})",
                 request.request_id(), result.message(), attempt + 1, options_.own_memory_attempts);
    std::this_thread::sleep_for(std::chrono::seconds(attempt));  // other work on the GPU may finish
  }
  if (result.own_device_memory_exhausted() && candidates_every_time) {
    // A shortage that lasts through every attempt is the candidate's to answer for (a fake
    // out-of-memory error lasts), even though its process held less than half of the GPU.
    result.set_verdict(RESOURCE_LIMIT);
    result.set_message("the candidate's process ran out of GPU memory in all " + std::to_string(result.attempts()) +
                       " attempts, each time holding less than half of the GPU: " + result.message());
  } else if (result.own_device_memory_exhausted()) {
    result.set_message("kgym's own processes ran out of GPU memory in " + std::to_string(result.attempts()) +
                       " attempts (not the candidate's doing; free the GPU or use a larger one): " + result.message());
  }
  result.set_wall_s(std::chrono::duration<double>(clock_type::now() - started).count());
  options_.withdrawn->forget(request.request_id());
  if (result.attempts() > 1)
    spdlog::info("request {}: {} after {} attempts in {:.2f} s", request.request_id(), Verdict_Name(result.verdict()),
                 result.attempts(), result.wall_s());
  return {result, trace};
}

std::string sandbox_evaluator::start_evaluation(const ExecRequest& request, const SandboxEvent::Built& built,
                                                std::string* workdir, SandboxEvent* event) {
  for (int attempt = 1;; ++attempt) {
    if (auto error = ensure_zygote(); !error.empty()) {
      zygote_.reset();
      return error;
    }
    if (prepared_workdirs_.empty()) {
      *workdir = new_workdir();
    } else {
      *workdir = prepared_workdirs_.front();
      prepared_workdirs_.pop_front();
    }
    top_up_prepared();
    SandboxCommand command;
    command.mutable_evaluate()->set_workdir(*workdir);
    for (const auto& next : prepared_workdirs_)
      command.mutable_evaluate()->add_next_workdirs(next);
    command.mutable_evaluate()->set_extension_cache(options_.extension_cache);
    for (const auto& extension : built.extensions())
      command.mutable_evaluate()->add_extension_keys(extension.key());
    *command.mutable_evaluate()->mutable_request() = request;
    std::string frame_error;
    const bool sent = zygote_->send(command);
    const auto status = sent ? zygote_->read_event(event, clock_type::now() + std::chrono::seconds(30), &frame_error)
                             : sandbox_process::read_status::closed;
    if (status == sandbox_process::read_status::event && event->has_started())
      return {};
    const bool gone = status == sandbox_process::read_status::closed;
    spdlog::warn("request {}: the sandbox zygote did not start it{}{}; the end of {}:\n{}", request.request_id(),
                 gone ? " (gone)" : "", gone && attempt == 1 ? ", sending it to a new one" : "",
                 options_.launch.log_path, log_tail(options_.launch.log_path));
    zygote_.reset();
    forget_prepared();
    remove_workdir(*workdir);
    if (!gone || attempt >= 2)
      return "the sandbox did not start the evaluation " + frame_error;
  }
}

ExecResult sandbox_evaluator::evaluate_once(const ExecRequest& original, const SandboxEvent::Built& built,
                                            CandidateTrace* trace) {
  const auto started = clock_type::now();
  ExecRequest request = original;
  *request.mutable_options() = with_defaults(request.options(), request.device());
  const EvalOptions& opts = request.options();
  ExecResult result = result_for(request);
  auto finish = [&](ExecResult r) {
    r.set_wall_s(std::chrono::duration<double>(clock_type::now() - started).count());
    return r;
  };

  std::string started_in;
  SandboxEvent event;
  if (auto error = start_evaluation(request, built, &started_in, &event); !error.empty()) {
    fail(&result, INTERNAL_ERROR, PHASE_START, error);
    return finish(result);
  }
  const fs::path workdir = started_in;
  std::string frame_error;  // the judge's frames from here on
  double compile_s = 0;
  for (const auto& extension : built.extensions())
    compile_s += extension.seconds();
  // Two processes, each its own session: the judge (whose frames these are) and the
  // candidate. Limits, the watchdog and kills cover both.
  const pid_t child = static_cast<pid_t>(event.started().pid());
  const pid_t candidate = static_cast<pid_t>(event.started().candidate_pid());
  // Its private disk is RAM (a tmpfs): what it holds counts as the candidate's memory.
  const int64_t disk_limit_mb = event.started().disk_limit_mb();
  // Where the executor sees it: unprivileged, the zygote's mount namespace holds its private disk.
  const fs::path candidate_dir =
      event.started().candidate_dir().empty() ? workdir / "candidate" : fs::path(event.started().candidate_dir());
  int64_t peak_disk = 0;
  const std::string cgroup_usage_file = event.started().memory_usage_file();
  const int64_t tasks_limit = event.started().tasks_limit();
  const int64_t polled_tasks_limit = event.started().polled_tasks_limit();
  const std::string cpuset = event.started().cpuset();
  auto private_disk_used = [&]() -> int64_t {
    if (disk_limit_mb <= 0)
      return 0;
    const int64_t used = disk_use_of(candidate_dir).used_bytes;
    peak_disk = std::max(peak_disk, used);
    return used;
  };
  // Without a tmpfs of its own (where the zygote is neither root nor root of a user and mount
  // namespace of its own), its directory, bound over its /tmp, /var/tmp and /dev/shm, lies on
  // the host's disk: the executor walks it every tick and stops the candidate past the
  // request's limit (what one tick lets it write past it is not bounded, only seen).
  const int64_t polled_disk_limit_mb = disk_limit_mb > 0 ? 0 : opts.disk_limit_mb();
  int64_t polled_disk_peak = 0;
  bool polled_too_many = false;
  auto polled_disk_over = [&]() -> bool {
    if (polled_disk_limit_mb <= 0)
      return false;
    const directory_use use = directory_use_of(candidate_dir, max_private_entries);
    polled_disk_peak = std::max(polled_disk_peak, use.bytes);
    polled_too_many = polled_too_many || use.more;
    return use.more || use.bytes > (polled_disk_limit_mb << 20);
  };
  // Without a pids cgroup (unprivileged), RLIMIT_NPROC counts the tasks of kgym's whole uid,
  // siblings included: the executor also counts the candidate's pid namespace every tick.
  int64_t polled_tasks_peak = 0;
  bool tasks_polled = false;
  auto polled_tasks_over = [&](const std::string& pidns) -> bool {
    if (polled_tasks_limit <= 0 || pidns.empty())
      return false;
    tasks_polled = true;
    polled_tasks_peak = std::max(polled_tasks_peak, pid_namespace_tasks(pidns));
    return polled_tasks_peak > polled_tasks_limit;
  };
  auto kill_both = [&] {
    kill_group(child);
    kill_group(candidate);
  };

  // Follow the evaluation: phase limits, memory watchdog, and the one result it may send.
  EvalPhase phase = PHASE_LOAD;
  // A phase's limit, and the whole evaluation's: the earlier of the two.
  const auto total_deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                      std::chrono::duration<double>(opts.total_timeout_s()));
  auto limit = [&] { return std::min(phase_deadline(opts, phase), total_deadline); };
  auto deadline = limit();
  bool have_result = false, exited = false;
  ExecResult reported;
  enum class kill_reason { none, timeout, memory, disk, tasks, cancelled, bad_frame, zygote_lost } killed =
      kill_reason::none;
  bool total_timed_out = false;
  int64_t peak_rss = 0;
  std::string peak_counted;
  bool counted_by_uid = false;  // the memory fallback without a cgroup held the candidate
  bool counted_by_pidns = false;  // unprivileged: its pid namespace held it
  // The candidate's pid namespace where it has one of its own (read before its code runs).
  std::string candidate_pidns = candidate > 1 ? pid_namespace_of(candidate) : std::string();
  if (candidate_pidns == pid_namespace_of(0))
    candidate_pidns.clear();
  // Stopped for `reason`: both processes killed, their exit report awaited a while.
  auto stop = [&](kill_reason reason) {
    killed = reason;
    kill_both();
    deadline = clock_type::now() + options_.exit_grace;
  };
  SandboxEvent::ChildExit exit_info;
  while (!exited) {
    auto wake = std::min(deadline, clock_type::now() + watchdog_tick);
    auto status = zygote_->read_event(&event, wake, &frame_error);
    if (status == sandbox_process::read_status::event) {
      if (event.has_phase()) {
        phase = event.phase().name();
        if (killed == kill_reason::none)
          deadline = limit();
      } else if (event.has_result()) {
        if (have_result && killed == kill_reason::none) {
          // Only one result is ever sent by the harness: a second one was forged.
          killed = kill_reason::bad_frame;
          frame_error = "more than one result frame";
          kill_both();
        }
        have_result = true;
        reported = event.result();
      } else if (event.has_exit()) {
        exit_info = event.exit();
        exited = true;
      }
      continue;
    }
    if (status == sandbox_process::read_status::closed || status == sandbox_process::read_status::bad_frame) {
      kill_both();
      killed = status == sandbox_process::read_status::closed ? kill_reason::zygote_lost : kill_reason::bad_frame;
      break;
    }
    // A tick: check memory and the phase's deadline.
    // The candidate's: its cgroup's count where it has one (every page once, wherever its
    // processes went, its private disk's tmpfs and memfd files too). A sum of resident sizes
    // counts a page each process shares with its forks once per process: 64 forked children of
    // a 256 MiB process read as 16 GiB. Without a cgroup, as root, everything running as the
    // candidate's uid (its own: candidates alternate two) and the memfd files those processes
    // hold; else its pid namespace's or its session's resident memory, with its private disk.
    // (Its uid's count holds its session's, so one walk over /proc serves where it applies.)
    const bool by_cgroup = !cgroup_usage_file.empty();
    const uid_t uid = !by_cgroup && candidate > 1 && ::geteuid() == 0 ? process_uid(candidate) : 0;
    const bool by_uid = uid != 0 && uid != static_cast<uid_t>(-1);
    counted_by_uid = counted_by_uid || by_uid;
    const bool by_pidns = !by_cgroup && !by_uid && !candidate_pidns.empty();
    counted_by_pidns = counted_by_pidns || by_pidns;
    const int64_t disk = private_disk_used();  // its tmpfs: in the cgroup's count where there is one
    // By resident size first (cheap: a page-table walk of a PyTorch process takes milliseconds),
    // by proportional size only when that is over the limit (it is never more).
    auto candidates = [&](bool proportional) -> int64_t {
      return by_cgroup  ? cgroup_memory_bytes(cgroup_usage_file)
             : by_uid   ? uid_memory_bytes(uid, proportional) + disk
             : by_pidns ? pid_namespace_memory_bytes(candidate_pidns, proportional) + disk
                        : (candidate > 1 ? session_memory_bytes(candidate, proportional) : 0) + disk;
    };
    // The candidate's alone: the judge's session (the judge, the reference runner) holds the
    // task's inputs and outputs, which no candidate chooses, and charging it left an honest
    // candidate of a loaded machine over a 1 GiB limit (hostile forks_workers, no cgroup, -j2).
    const int64_t limit = opts.memory_limit_mb() * (int64_t{1} << 20);
    int64_t rss = candidates(false);
    const bool proportional = rss > limit && !by_cgroup;
    if (proportional)
      rss = candidates(true);
    if (rss > peak_rss) {  // what the evidence says was counted
      peak_rss = rss;
      peak_counted = by_cgroup ? "the candidate's memory cgroup"
                     : std::string(by_uid ? "its uid's" : by_pidns ? "its pid namespace's" : "its session's") +
                           " processes by " + (proportional ? "proportional" : "resident") + " size, and its private disk";
    }
    if (killed == kill_reason::none && rss > limit) {
      stop(kill_reason::memory);
    } else if (killed == kill_reason::none && polled_disk_over()) {
      stop(kill_reason::disk);
    } else if (killed == kill_reason::none && polled_tasks_over(candidate_pidns)) {
      stop(kill_reason::tasks);
    } else if (killed == kill_reason::none && options_.withdrawn->cancelled(request.request_id())) {
      stop(kill_reason::cancelled);
    } else if (clock_type::now() >= deadline) {
      if (killed != kill_reason::none) {  // killed, yet no exit report: the zygote is stuck
        killed = kill_reason::zygote_lost;
        break;
      }
      total_timed_out = clock_type::now() >= total_deadline;
      stop(kill_reason::timeout);
    }
  }

  if (killed == kill_reason::zygote_lost || killed == kill_reason::bad_frame) {
    spdlog::warn("request {}: sandbox zygote replaced ({}); the end of {}:\n{}", request.request_id(),
                 killed == kill_reason::bad_frame ? frame_error : "lost", options_.launch.log_path,
                 log_tail(options_.launch.log_path));
    kill_both();
    zygote_.reset();
    forget_prepared();
  }
  if (killed == kill_reason::timeout && total_timed_out) {
    fail(&result, TIMEOUT, phase,
         "the evaluation ran past its total limit of " + std::to_string(int(opts.total_timeout_s())) + " s (in phase '" +
             phase_name(phase) + "')");
  } else if (killed == kill_reason::timeout) {
    fail(&result, TIMEOUT, phase,
         "phase '" + phase_name(phase) + "' ran past its limit of " + std::to_string(int(timeout_for(opts, phase))) + " s");
  } else if (killed == kill_reason::memory) {
    fail(&result, RESOURCE_LIMIT, phase,
         "host memory above the limit of " + std::to_string(opts.memory_limit_mb()) + " MiB");
    add_evidence(&result, MEMORY_LIMIT,
                 "peak memory " + std::to_string(peak_rss >> 20) + " MiB: kgym's sandbox processes by resident size, and " +
                     peak_counted,
                 "executor");
  } else if (killed == kill_reason::cancelled) {
    fail(&result, CANCELLED, phase, "withdrawn by its client while it ran (in phase '" + phase_name(phase) + "'); stopped");
  } else if (killed == kill_reason::disk) {
    fail(&result, RESOURCE_LIMIT, phase,
         "its private disk (/tmp, /var/tmp and /dev/shm together) went over the limit of " +
             std::to_string(polled_disk_limit_mb) + " MiB");
    add_evidence(&result, DISK_LIMIT,
                 polled_too_many ? "more than " + std::to_string(max_private_entries) + " files"
                                 : std::to_string(polled_disk_peak >> 20) + " MiB seen",
                 "executor");
  } else if (killed == kill_reason::tasks) {
    fail(&result, RESOURCE_LIMIT, phase,
         "it ran more than " + std::to_string(polled_tasks_limit) + " tasks (processes and threads) at once");
    add_evidence(&result, TASKS_LIMIT, std::to_string(polled_tasks_peak) + " tasks seen in its pid namespace",
                 "executor");
  } else if (killed == kill_reason::bad_frame) {
    fail(&result, HACKED, phase, "the sandbox channel carried a forged or malformed frame");
    add_evidence(&result, FORGED_FRAME, frame_error, "executor");
  } else if (killed == kill_reason::zygote_lost) {
    fail(&result, CRASHED, phase, "the sandbox stopped answering; it was replaced");
  } else if (have_result) {
    result = reported;
    result.set_request_id(request.request_id());
    explain_candidate_exit(exit_info, &result);
  } else {
    verdict_from_exit(exit_info, phase, &result);
  }
  // Whatever became of it (a child it started may have been the one stopped, and the
  // candidate answered on), it went over its limit; a worse verdict stands.
  if (exit_info.candidate_out_of_memory() && killed == kill_reason::none && result.verdict() != HACKED)
    charge_limit(&result, phase,
                 "host memory above the limit of " + std::to_string(opts.memory_limit_mb()) +
                     " MiB (the kernel stopped a process of the candidate's cgroup)",
                 MEMORY_LIMIT, "kernel");
  if (exit_info.other_gpu_processes_size() > 0 && killed == kill_reason::none) {
    // A CUDA context outside the candidate's traced process: what it did there (filled the
    // outputs after the answer, loaded the GPU while the reference was timed) no trace shows.
    std::string which;
    for (const auto& process : exit_info.other_gpu_processes())
      which += (which.empty() ? "" : ", ") + process;
    if (result.verdict() != HACKED)
      fail(&result, HACKED, phase, "a process the candidate started used the GPU, outside its traced process: " + which);
    add_evidence(&result, GPU_PROCESS_OUTSIDE_TRACE, which, "zygote");
  }
  if (exit_info.gpu_watch() == "nvml")
    result.add_isolation("candidate:gpu_watch");
  else if (exit_info.gpu_watch() == "descriptors")
    result.add_isolation("candidate:gpu_watch_by_descriptors");
  if (!cgroup_usage_file.empty())
    result.add_isolation("candidate:memory_cgroup");
  else if (counted_by_uid)
    result.add_isolation("candidate:memory_by_uid");
  else if (counted_by_pidns)
    result.add_isolation("candidate:memory_by_pidns");
  if (tasks_limit > 0)
    result.add_isolation("candidate:pids_cgroup=" + std::to_string(tasks_limit));
  if (tasks_polled)
    result.add_isolation("candidate:tasks_by_polling=" + std::to_string(polled_tasks_limit));
  if (!cpuset.empty())
    result.add_isolation("candidate:cpuset=" + cpuset);
  if (polled_disk_limit_mb > 0)
    result.add_isolation("candidate:disk_by_polling=" + std::to_string(polled_disk_limit_mb) + "MiB");
  if (disk_limit_mb > 0) {
    private_disk_used();
    result.add_isolation("candidate:private_disk=" + std::to_string(disk_limit_mb) + "MiB");
    charge_full_disk(peak_disk, disk_limit_mb, phase, &result);
  }
  for (const auto& [step, seconds] : exit_info.seconds())
    (*result.mutable_harness_seconds())[step] = seconds;
  if (built.extensions_size() > 0) {
    (*result.mutable_harness_seconds())["extension_build"] = built.seconds();
    (*result.mutable_harness_seconds())["extension_compile"] = compile_s;
  }
  if (exit_info.swept() > 0)
    add_evidence(&result, LEFTOVER_PROCESSES,
                 std::to_string(exit_info.swept()) + " processes outlived the evaluation and were killed", "executor");
  // The trace is read here, outside the candidate's process, after it has exited; only its
  // authenticated lines will count (trace_ruling). On the CPU it holds the phase calls only
  // (the profile there comes from the interpreter's launch record).
  if (!exit_info.trace_key().empty()) {
    *trace = read_candidate_trace((candidate_dir / "trace.jsonl").string(), exit_info.trace_key(), request);
    if (!options_.trace_archive.empty())
      archive_trace(workdir, candidate_dir, exit_info.trace_key(), options_.trace_archive, request.request_id());
  }
  result.set_log(evaluation_log(workdir, candidate_dir));
  remove_workdir(workdir);
  return finish(result);
}

}  // namespace kgym
