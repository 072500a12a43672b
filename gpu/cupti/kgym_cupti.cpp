// kgym's CUPTI injection library, loaded into the sandbox through CUDA_INJECTION64_PATH.
//
// It records every kernel that runs (CUPTI activity records) and, for each launch that goes
// through the driver API, which shared object made the call: the first frame on the stack
// outside the CUDA driver, CUPTI and this library. A kernel is "generated" when that object
// lies under the evaluation's own directory (KGYM_CUPTI_GENERATED_ROOT): Triton's JIT
// launchers and extensions built from the candidate live there; PyTorch, cuBLAS and cuDNN
// do not. This is a fact about how the kernel reached the GPU, not about its name.
//
// Runtime launches get the same attribution (an extension built from the candidate launches
// through the runtime from a .so under that directory). Kernels are matched to their launch
// by CUPTI's correlation id; the cbid in the trace is the launch call's (+100000: runtime).
//
// Control (called by the sandbox through ctypes): kgym_cupti_set_phase(name) labels the
// launches that follow; kgym_cupti_flush() writes every finished record to the trace file
// (KGYM_CUPTI_TRACE); kgym_cupti_finish() flushes, writes the end record and stops writing.
// Launch attribution costs a stack walk per launch, so the sandbox turns it off (phase
// "untraced") around timed repetitions.
//
// The trace is authenticated: each line is "<MAC> <TraceRecord JSON>" with a sequence number,
// under a key read at CUDA initialisation from the pipe KGYM_CUPTI_KEY_FD. That happens before
// the candidate's code exists; the key then lives only in this library's memory (never in a
// Python object), and the executor, which got it from the zygote, checks every line, the
// order, the end record and the phase calls (gpu/profiler/trace_check).
#include <cupti.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/cupti/trace_mac.hpp"

namespace {

struct launch_info {
  std::string phase;
  std::string launcher;  // the shared object that called the driver's launch
  bool generated = false;
  int cbid = 0;
};

std::mutex mutex;
std::unordered_map<uint32_t, launch_info> launches;  // by correlation id
std::string phase = "untraced";
std::string generated_root;
int trace_fd = -1;
uint8_t trace_key[kgym::trace_key_bytes];
uint64_t next_seq = 0;  // records written so far
bool finished = false;  // the end record is written: nothing more is
CUpti_SubscriberHandle subscriber;

bool is_cuda_internal(const char* path) {
  const char* base = std::strrchr(path, '/');
  base = base ? base + 1 : path;
  return std::strncmp(base, "libcuda.", 8) == 0 || std::strncmp(base, "libcudart", 9) == 0 ||
         std::strncmp(base, "libcupti", 8) == 0 || std::strncmp(base, "libkgym_cupti", 13) == 0;
}

std::string calling_object() {
  void* frames[48];
  int n = backtrace(frames, 48);
  for (int i = 1; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) && info.dli_fname && !is_cuda_internal(info.dli_fname))
      return info.dli_fname;
  }
  return "?";
}

std::atomic<bool> traced{false};

const CUpti_CallbackId driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
const CUpti_CallbackId runtime_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};

// Untraced phases (timed repetitions) run with no CUPTI callback and no activity record.
void set_tracing(bool on) {
  for (auto cbid : driver_launches)
    cuptiEnableCallback(on ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  for (auto cbid : runtime_launches)
    cuptiEnableCallback(on ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  if (on)
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  else
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

// Runtime launches (PyTorch's own kernels, cuBLAS) and driver launches (Triton) both pass
// here: every kernel of a traced phase gets its phase and its launcher.
void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) {
  if (data->callbackSite != CUPTI_API_ENTER || !traced.load(std::memory_order_relaxed))
    return;
  std::lock_guard<std::mutex> lock(mutex);
  if (launches.count(data->correlationId))
    return;  // a driver launch made by the runtime call already recorded
  launch_info info;
  info.phase = phase;
  info.cbid = static_cast<int>(cbid) + (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 100000 : 0);
  info.launcher = calling_object();
  info.generated = !generated_root.empty() && info.launcher.rfind(generated_root, 0) == 0;
  launches[data->correlationId] = std::move(info);
}

void json_string(std::string& out, const char* text) {
  out += '"';
  for (const char* p = text ? text : ""; *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void write_all(const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0 && trace_fd >= 0) {
    ssize_t n = ::write(trace_fd, p, left);
    if (n <= 0)
      return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// One record, with its sequence number and MAC; the caller holds `mutex`.
void emit(const std::string& body) {
  if (finished || trace_fd < 0)
    return;
  std::string record = "{\"seq\":" + std::to_string(next_seq++) + "," + body + "}";
  write_all(kgym::trace_mac_hex(trace_key, record) + " " + record + "\n");
}

bool read_key(int fd) {
  size_t got = 0;
  while (got < sizeof trace_key) {
    ssize_t n = ::read(fd, trace_key + got, sizeof trace_key - got);
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return got == sizeof trace_key;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
    auto it = launches.find(k->correlationId);
    char numbers[512];
    std::snprintf(numbers, sizeof numbers,
                  "\"start_ns\":%llu,\"end_ns\":%llu,\"stream\":%u,\"device\":%u,\"correlation\":%u,"
                  "\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"cbid\":%d,\"generated\":%s,",
                  static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end), k->streamId,
                  k->deviceId, k->correlationId, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                  it == launches.end() ? 0 : it->second.cbid,
                  it != launches.end() && it->second.generated ? "true" : "false");
    std::string body = "\"kernel\":{";
    body += numbers;
    body += "\"name\":";
    json_string(body, k->name);
    body += ",\"phase\":";
    json_string(body, it == launches.end() ? "untraced" : it->second.phase.c_str());
    body += ",\"launcher\":";
    json_string(body, it == launches.end() ? "" : it->second.launcher.c_str());
    body += "}";
    emit(body);
    if (it != launches.end())
      launches.erase(it);
  }
  std::free(buffer);
}

}  // namespace

extern "C" {

// "untraced" also stops callbacks and activity records: timed repetitions pay no tracing cost.
__attribute__((visibility("default"))) void kgym_cupti_set_phase(const char* name) {
  std::string next = name ? name : "untraced";
  bool was_traced, now_traced = next != "untraced";
  {
    std::lock_guard<std::mutex> lock(mutex);
    was_traced = phase != "untraced";
    phase = next;
    std::string body = "\"phase\":";
    json_string(body, next.c_str());
    emit(body);  // every call, in order: the executor knows the harness's calls
    traced.store(now_traced);
  }
  if (now_traced != was_traced)
    set_tracing(now_traced);
}

__attribute__((visibility("default"))) int kgym_cupti_flush() {
  cuptiActivityFlushAll(1);
  return trace_fd >= 0 ? 0 : -1;
}

// The harness's last call: every record flushed, then the end record; later calls of any
// kind write nothing, so whatever follows the end record in the file was not written here.
__attribute__((visibility("default"))) int kgym_cupti_finish() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(mutex);
  if (finished || trace_fd < 0)
    return -1;
  emit("\"end\":{\"records\":" + std::to_string(next_seq) + "}");
  finished = true;
  ::close(trace_fd);
  trace_fd = -1;
  return 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  if (const char* root = std::getenv("KGYM_CUPTI_GENERATED_ROOT"))
    generated_root = root;
  // No key, no trace: an unauthenticated trace would be worth nothing to the executor.
  const char* key_fd = std::getenv("KGYM_CUPTI_KEY_FD");
  const char* path = std::getenv("KGYM_CUPTI_TRACE");
  if (key_fd && path && read_key(std::atoi(key_fd)))
    trace_fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  // Callbacks and activity records start with the first traced phase (kgym_cupti_set_phase).
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_launch), nullptr) != CUPTI_SUCCESS)
    return 0;
  return 1;
}

}  // extern "C"
