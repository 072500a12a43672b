// The sandbox zygote as a child process: started, fed SandboxCommands over a pipe, read for
// SandboxEvents with deadlines, killed. It knows nothing about verdicts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

struct sandbox_launch {
  std::string python = "python3";
  std::string sandbox_dir;  // holds the kgym_sandbox package
  Device device = CPU;
  std::string log_path;     // the zygote's own stderr goes here
  std::string cupti_library;  // gpu/cupti's injection library (CUDA only; empty: none)
  std::string trace_library;  // gpu/trace's library (CPU only: phase calls, no kernels; empty: none)
  std::string checks_library;  // gpu/checks' output checks for the judge (CUDA only; empty: PyTorch's operators)
  int gpu = -1;               // CUDA only: the one GPU this sandbox sees (-1: the first inherited, sandbox_visible_gpu)
  // CUDA only: this executor's place among the process's GPU executors, which picks its timing
  // cores (timing_cores_for); -1: by `gpu`. By place, GPUs 6 and 7 of a 16-core host get cores.
  int timing_slot = -1;
  // CUDA only: "J,C,R", a core each for the judge, the candidate's process and the reference
  // runner (a launch-bound model's time follows its launching thread's core, and a candidate
  // must not share a core with the reference); "" picks them from the end of the allowed
  // cores by `gpu`; "none": no pinning.
  std::string timing_cores;
  std::string module = "kgym_sandbox.zygote";  // or kgym_sandbox.builder: the extension builder
  // Names of the caller's environment variables that also pass into the sandbox, comma-
  // separated ($KGYM_SANDBOX_ENV, see sandbox_environment_passes).
  std::string extra_env;
  // Whether the zygote may put each candidate in a memory cgroup of its own where the machine
  // grants one (false: the executor's fallback counts the candidate's uid instead).
  bool memory_cgroup = true;
  // CUDA: whether the zygote's GPU watch may ask NVML which processes hold a context (false: it
  // reads the candidate's processes' descriptors instead, as where NVML is missing or blind).
  bool nvml_watch = true;
};

// Whether the caller's environment variable `name` reaches the sandbox: PATH, HOME, USER,
// LOGNAME, LANG, LC_*, TZ, TERM, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
// CUDA_HOME, CUDA_PATH, NVIDIA_*, TRITON_*, VIRTUAL_ENV, PYENV_ROOT, PYENV_VERSION, TMPDIR
// and the names in `extra`; nothing else (no credentials, no kgym secrets). kgym then adds
// its own (PYTHONPATH, the trace libraries, the timing cores).
bool sandbox_environment_passes(const std::string& name, const std::string& extra);

// CUDA_VISIBLE_DEVICES for a CUDA sandbox: always one GPU, so a candidate reaches no other GPU
// of the host. `gpu` when given (>= 0), else the first of what the caller made visible
// (`inherited`, which may name GPUs by UUID or MIG instance), else GPU 0.
std::string sandbox_visible_gpu(int gpu, const std::string& inherited);

// The cores KGYM_TIMING_CORES names for a sandbox, "JUDGE,CANDIDATE,REFERENCE" ("" for none):
// `requested` as given ("none" -> ""), or, when empty, the last two of `allowed` for slot 0
// (`gpu`: the executor's timing slot), the two before them for slot 1, ..., while at least two
// other cores remain: the judge on the first, the candidate's process and the reference runner on the second. They never
// run at once, and a launch-bound model's time is its core's (on an H100's virtual machine
// cores differed by up to 55% in launches per second), so both sides share one.
std::string timing_cores_for(const std::vector<int>& allowed, int gpu, const std::string& requested);

// Which pair of timing cores `launch` takes: its timing_slot, or where none is given its gpu.
inline int timing_slot_of(const sandbox_launch& launch) {
  return launch.timing_slot >= 0 ? launch.timing_slot : launch.gpu;
}

// Keeps this process's threads, and every process they start later (zygotes included), off
// the timing cores of each of its `executors` CUDA executors (timing slots 0..executors-1)
// before any of their sandboxes starts. Each sandbox also does so for its own at its start,
// but a zygote started before another GPU's sandbox would then run its next evaluations'
// warm-ups on that GPU's timing cores. Nothing for fewer than two or with $KGYM_TIMING_CORES set.
void reserve_timing_cores(size_t executors);

// `allowed` without `taken`, in order: where kgym's own threads run once timing cores are taken.
std::vector<int> cores_besides(const std::vector<int>& allowed, const std::vector<int>& taken);

class sandbox_process {
 public:
  using clock = std::chrono::steady_clock;
  enum class read_status { event, timeout, closed, bad_frame };

  explicit sandbox_process(sandbox_launch launch);
  ~sandbox_process();
  sandbox_process(const sandbox_process&) = delete;
  sandbox_process& operator=(const sandbox_process&) = delete;

  // Starts the zygote and waits for its Ready event. Returns an error text, empty on success.
  // `prepare`: directories (made by the executor) the zygote prepares evaluations' processes
  // in at once, before any request (the first Evaluates name them).
  std::string start(clock::duration timeout, SandboxEvent::Ready* ready = nullptr,
                    const std::vector<std::string>& prepare = {});
  // Whether the process is still there; one that exited (killed while idle, say) is reaped
  // here and its pipes closed, so its next user starts a new one instead of failing a request.
  bool running();
  bool send(const SandboxCommand& command);
  // Reads one event, waiting until `deadline`. On bad_frame, `error` says what was wrong.
  read_status read_event(SandboxEvent* event, clock::time_point deadline, std::string* error);
  // Kills the zygote's whole process group and reaps it.
  void stop();
  pid_t pid() const { return pid_; }

 private:
  sandbox_launch launch_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffer_;
};

}  // namespace kgym
