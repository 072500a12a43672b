#include "tests/test_support.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "messages/trace_phase.hpp"
#include "pipeline/file_io.hpp"
#include "pipeline/paths.hpp"
#include "pipeline/task_loader.hpp"

namespace kgym::test {

std::string source_path(const std::string& relative) { return kgym_home() + "/" + relative; }

std::string read_text(const std::string& path) { return read_file(path); }

Device test_device() {
  const char* d = std::getenv("KGYM_TEST_DEVICE");
  return d && std::string(d) == "cuda" ? CUDA : CPU;
}

bool gpu_present() { return ::access("/dev/nvidiactl", F_OK) == 0; }

std::string python() {
  const char* p = std::getenv("KGYM_PYTHON");
  return p && *p ? p : "python3";
}

ExecRequest request_for(const std::string& task_id, const std::string& candidate_id,
                        const std::string& candidate_source) {
  ExecRequest request;
  request.set_request_id(task_id + "/" + candidate_id);
  // A built-in task by name, or a task directory under the source tree ("tests/tasks/...").
  *request.mutable_task() = load_task(source_path(task_id.find('/') == std::string::npos ? "tasks/" + task_id : task_id));
  request.mutable_candidate()->set_id(candidate_id);
  request.mutable_candidate()->set_source(candidate_source);
  request.set_device(test_device());
  auto* o = request.mutable_options();
  o->set_apply_cpu_sizes(true);
  bool cuda = test_device() == CUDA;
  o->set_load_timeout_s(60);
  o->set_correctness_timeout_s(cuda ? 60 : 10);
  o->set_timing_timeout_s(60);
  o->set_timing_reps(cuda ? 20 : 3);
  o->set_min_timed_s(0.2);
  // Faulting in memory is slow on a small CPU machine (4 GiB took 10 s here): a lower limit
  // lets the memory watchdog, not the phase's clock, stop a hoarder.
  if (!cuda)
    o->set_memory_limit_mb(2048);
  return request;
}

namespace {

// /proc/PID/stat's state letter and parent pid ("pid (name) S ppid ..."; the name may hold ')');
// no state once the process is gone.
struct process_stat {
  char state = 0;
  int parent = 0;
};

process_stat stat_of(int pid) {
  process_stat st;
  try {
    const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    std::istringstream rest(stat.substr(stat.rfind(')') + 1));
    rest >> st.state >> st.parent;
  } catch (...) {
  }
  return st;
}

}  // namespace

int parent_of(int pid) { return stat_of(pid).parent; }

namespace {

// Whether `pid` runs below another test binary than this one (its command's first word ends
// in "_test"): a test of another shard or ctest entry running beside this one, on this host.
bool below_another_test(int pid) {
  for (int p = parent_of(pid); p > 1; p = parent_of(p)) {
    if (p == ::getpid())
      return false;
    std::string command;
    try {
      command = read_text("/proc/" + std::to_string(p) + "/cmdline");
    } catch (...) {
      return false;
    }
    command = command.substr(0, command.find('\0'));
    if (command.size() >= 5 && command.compare(command.size() - 5, 5, "_test") == 0)
      return true;
  }
  return false;
}

}  // namespace

std::vector<int> all_processes() {
  std::vector<int> pids;
  DIR* dir = ::opendir("/proc");
  while (dirent* e = ::readdir(dir))
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
      pids.push_back(std::atoi(e->d_name));
  ::closedir(dir);
  return pids;
}

bool process_with_argument(const std::string& needle) {
  for (int pid : all_processes()) {
    std::string cmdline;
    try {
      cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    } catch (...) {
      continue;
    }
    if (cmdline.find(needle) != std::string::npos && cmdline.find("gtest") == std::string::npos &&
        !below_another_test(pid))
      return true;
  }
  return false;
}

std::vector<int> live_children_of(int parent) {
  std::vector<int> children;
  for (int pid : all_processes()) {
    const process_stat st = stat_of(pid);
    if (st.parent == parent && st.state != 0 && st.state != 'Z')
      children.push_back(pid);
  }
  return children;
}

std::vector<PhaseCall> phase_calls_named(const std::vector<std::string>& names) {
  std::vector<PhaseCall> calls;
  for (const auto& name : names) {
    const auto colon = name.find(':');
    const auto kind = enum_named<TracePhase>("trace_" + name.substr(0, colon));
    calls.push_back(phase_call(kind.value_or(TRACE_PHASE_UNSPECIFIED),
                               colon == std::string::npos ? 0 : std::stoi(name.substr(colon + 1))));
  }
  return calls;
}

std::vector<std::string> phase_names(const std::vector<PhaseCall>& calls) {
  std::vector<std::string> names;
  for (const auto& call : calls)
    names.push_back(trace_phase_name(call));
  return names;
}

std::string phase_json(const std::string& name) {
  const PhaseCall call = phase_calls_named({name}).front();
  return "{\"kind\":\"" + TracePhase_Name(call.kind()) + "\",\"rep\":" + std::to_string(call.rep()) + "}";
}

}  // namespace kgym::test
