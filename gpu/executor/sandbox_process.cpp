#include "gpu/executor/sandbox_process.hpp"

#include "gpu/executor/gpu_assignment.hpp"
#include "gpu/executor/name_list.hpp"
#include "gpu/executor/timing_slots.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "messages/json.hpp"

namespace kgym {

std::string timing_cores_for(const std::vector<int>& allowed, int gpu, const std::string& requested) {
  if (requested == "none")
    return "";
  if (!requested.empty())
    return requested;
  const size_t n = allowed.size(), slot = static_cast<size_t>(std::max(gpu, 0));
  if (n < 2 * (slot + 1) + 2)
    return "";
  const size_t first = n - 2 * (slot + 1);
  const std::string judge = std::to_string(allowed[first]), runners = std::to_string(allowed[first + 1]);
  return judge + "," + runners + "," + runners;
}

std::vector<int> cores_besides(const std::vector<int>& allowed, const std::vector<int>& taken) {
  std::vector<int> left;
  for (int c : allowed)
    if (std::find(taken.begin(), taken.end(), c) == taken.end())
      left.push_back(c);
  return left;
}

namespace {

std::vector<int> cores_in(const cpu_set_t& set) {
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set))
      cores.push_back(c);
  return cores;
}

// The cores this process was allowed when it first started a sandbox: later its threads are
// kept off the timing cores, and each GPU's are still counted from the whole set.
const std::vector<int>& process_cores() {
  static const std::vector<int> cores = [] {
    cpu_set_t set;
    return ::sched_getaffinity(0, sizeof set, &set) == 0 ? cores_in(set) : std::vector<int>{};
  }();
  return cores;
}

// Every thread of this process (and what they start later: threads and children inherit it)
// off the timing cores of every sandbox started so far. Only the running evaluation's timed
// processes go there: a thread of kgym's on a shared timing core would take from the
// candidate's process (lowest priority) what it never takes from the reference runner's.
void keep_threads_off(const std::vector<int>& timing) {
  static std::mutex mutex;
  static std::vector<int> taken;
  std::lock_guard<std::mutex> lock(mutex);
  for (int c : timing)  // a zygote started again names its cores again
    if (std::find(taken.begin(), taken.end(), c) == taken.end())
      taken.push_back(c);
  const std::vector<int> left = cores_besides(process_cores(), taken);
  if (left.empty())
    return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : left)
    CPU_SET(c, &set);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec))
    ::sched_setaffinity(std::atoi(entry.path().filename().c_str()), sizeof set, &set);  // one that ended: ESRCH
}

std::vector<int> cores_named(const std::string& cores) {
  std::vector<int> named;
  for (const auto& core : comma_separated(cores))
    named.push_back(std::atoi(core.c_str()));
  return named;
}

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

constexpr size_t max_frame_bytes = 64u << 20;

}  // namespace

void reserve_timing_cores(size_t executors) {
  const char* given = std::getenv("KGYM_TIMING_CORES");
  if (executors < 2 || (given && *given))
    return;
  for (size_t slot = 0; slot < executors; ++slot)
    keep_threads_off(cores_named(timing_cores_for(process_cores(), host_timing_slot(static_cast<int>(slot)), "")));
}

sandbox_process::sandbox_process(sandbox_launch launch) : launch_(std::move(launch)) {}

sandbox_process::~sandbox_process() { stop(); }

std::string sandbox_visible_gpu(int gpu, const std::string& inherited) {
  if (gpu >= 0)
    return std::to_string(gpu);
  const std::string first = inherited.substr(0, inherited.find(','));
  return first.empty() ? "0" : first;
}

bool sandbox_environment_passes(const std::string& name, const std::string& extra) {
  // What Python, the CUDA driver and toolkit, Triton's compiler and the locale need.
  static const char* const exact[] = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TERM", "LD_LIBRARY_PATH",
                                      "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
                                      "VIRTUAL_ENV", "PYENV_ROOT", "PYENV_VERSION", "TMPDIR"};
  for (const char* allowed : exact)
    if (name == allowed)
      return true;
  for (const char* prefix : {"LC_", "NVIDIA_", "TRITON_"})
    if (name.rfind(prefix, 0) == 0)
      return true;
  const auto named = comma_separated(extra);
  return std::find(named.begin(), named.end(), name) != named.end();
}

std::string sandbox_process::start(clock::duration timeout, SandboxEvent::Ready* ready,
                                   const std::vector<std::string>& prepare) {
  stop();
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0)
    return std::string("pipe: ") + std::strerror(errno);
  // Everything the child needs is prepared before fork: after it, only exec.
  std::string device = launch_.device == CUDA ? "cuda" : "cpu";
  std::vector<std::string> args = {launch_.python, "-m", launch_.module, "--device", device};
  if (!launch_.memory_cgroup && launch_.module == "kgym_sandbox.zygote")
    args.push_back("--no-memory-cgroup");
  if (!launch_.nvml_watch && launch_.module == "kgym_sandbox.zygote")
    args.push_back("--no-nvml-watch");
  for (const auto& workdir : prepare)
    args.insert(args.end(), {"--prepare", workdir});
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string cores;
  if (launch_.device == CUDA) {
    std::string requested = launch_.timing_cores;
    if (const char* given = std::getenv("KGYM_TIMING_CORES"); requested.empty() && given)
      requested = given;
    // Only where kgym picks the cores: a slot of the host's (timing_slots.hpp), not the process's.
    cores = timing_cores_for(process_cores(), requested.empty() ? host_timing_slot(std::max(timing_slot_of(launch_), 0))
                                                                : 0,
                             requested);
    keep_threads_off(cores_named(cores));
  }
  std::string pythonpath = "PYTHONPATH=" + launch_.sandbox_dir;
  // An explicit environment (sandbox_environment): nothing else of the caller's passes.
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (sandbox_environment_passes(name, launch_.extra_env) &&
        !(launch_.device == CUDA && name == "CUDA_VISIBLE_DEVICES"))
      env_store.push_back(std::move(entry));
  }
  if (launch_.device == CUDA)
    env_store.push_back("CUDA_VISIBLE_DEVICES=" + sandbox_visible_gpu(launch_.gpu, visible_gpus()));
  env_store.push_back(pythonpath);
  // Where the build put the schema's Python (kgym_pb2, for the sandbox's frames).
  const char* schema = std::getenv("KGYM_SCHEMA_PYTHON");
  env_store.push_back(std::string("KGYM_SCHEMA_PYTHON=") + (schema && *schema ? schema : KGYM_SCHEMA_PYTHON_DIR));
  if (launch_.device == CUDA && !launch_.cupti_library.empty())
    env_store.push_back("KGYM_CUPTI_LIB=" + launch_.cupti_library);
  if (launch_.device == CUDA && !launch_.checks_library.empty())
    env_store.push_back("KGYM_CHECKS_LIB=" + launch_.checks_library);
  if (launch_.device == CPU && !launch_.trace_library.empty())
    env_store.push_back("KGYM_TRACE_LIB=" + launch_.trace_library);
  if (!cores.empty())
    env_store.push_back("KGYM_TIMING_CORES=" + cores);
  env_store.push_back("PYTHONUNBUFFERED=1");
  env_store.push_back("PYTHONDONTWRITEBYTECODE=1");
  std::vector<char*> envp;
  for (auto& e : env_store)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  int log_fd = ::open(launch_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

  pid_t parent = ::getpid();
  // If kgym dies (SIGKILL leaves it no time to clean up), the zygote is told (SIGTERM) and ends
  // the evaluation it runs before it goes: an endless candidate would otherwise spin on with
  // nobody holding its deadlines (its process is pid 1 of a namespace of its own). Any other
  // sandbox process (an extension builder) goes at once.
  const int parent_death_signal = launch_.module == "kgym_sandbox.zygote" ? SIGTERM : SIGKILL;
  pid_t pid = ::fork();
  if (pid < 0)
    return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, parent_death_signal);
    if (::getppid() != parent)
      ::_exit(1);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    if (log_fd >= 0)
      ::dup2(log_fd, 2);
    // Only the three streams go on: whatever kgym's caller left open (a host file on fd 9)
    // must not reach the sandbox.
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
      for (int fd = 3; fd < 65536; ++fd)
        ::close(fd);
    ::execvpe(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  if (log_fd >= 0)
    ::close(log_fd);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  pid_ = pid;
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  buffer_.clear();

  SandboxEvent event;
  std::string error;
  auto status = read_event(&event, clock::now() + timeout, &error);
  if (status == read_status::event && event.has_ready()) {
    if (ready)
      *ready = event.ready();
    return {};
  }
  stop();
  if (status == read_status::timeout)
    return "the sandbox did not start in time (is PyTorch importable by " + launch_.python + "?)";
  if (status == read_status::closed)
    return "the sandbox exited while starting; see " + launch_.log_path;
  return "the sandbox spoke an unexpected first frame: " + error;
}

bool sandbox_process::send(const SandboxCommand& command) {
  if (to_child_ < 0)
    return false;
  std::string line = to_json(command) + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(to_child_, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

sandbox_process::read_status sandbox_process::read_event(SandboxEvent* event, clock::time_point deadline,
                                                         std::string* error) {
  for (;;) {
    auto newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      event->Clear();
      std::string parse_error = from_json(line, event);
      if (!parse_error.empty()) {
        if (error)
          *error = parse_error + " in frame: " + line.substr(0, 200);
        return read_status::bad_frame;
      }
      return read_status::event;
    }
    if (from_child_ < 0)
      return read_status::closed;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0)
      return read_status::timeout;
    pollfd pfd{from_child_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0)
      return read_status::timeout;
    char chunk[65536];
    ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      close_fd(from_child_);
      return read_status::closed;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    if (buffer_.size() > max_frame_bytes) {
      if (error)
        *error = "frame larger than 64 MiB";
      buffer_.clear();
      return read_status::bad_frame;
    }
  }
}

bool sandbox_process::running() {
  if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0)
    return true;
  pid_ = -1;  // reaped just now (its number may already be another's), or never started
  stop();     // its pipes
  return false;
}

void sandbox_process::stop() {
  close_fd(to_child_);  // end of its commands: it discards what it prepared and collects its children
  close_fd(from_child_);
  if (pid_ > 0) {
    // A moment for that (orphans of a killed zygote would be left to init); then kill.
    bool gone = false;
    for (int waited_ms = 0; waited_ms < 3000; waited_ms += 10) {
      if ((gone = ::waitpid(pid_, nullptr, WNOHANG) != 0))
        break;
      ::usleep(10000);
    }
    if (!gone) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_ = -1;
}

}  // namespace kgym
