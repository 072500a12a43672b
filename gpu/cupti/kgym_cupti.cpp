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
// Control (called by the sandbox through ctypes, the same calls as gpu/trace's CPU library):
// kgym_trace_set_phase(kind, rep) (kgym.proto's TracePhase; the rep of TRACE_TIMED) labels
// the launches that follow and is itself recorded;
// kgym_trace_finish() flushes every record (held until then: write_pending) and writes the
// end record. Each phase call is recorded with its time on CUPTI's clock (the clock of the
// kernel records).
//
// Phases come in three kinds. Untraced: nothing is recorded. Batch and idle (the timed
// batches and the time between them): every kernel, copy and memset that runs is recorded
// with its start and end, but no launch is attributed (a stack walk per launch would weigh
// on the timed calls); the executor checks that all of them ran inside the candidate's own
// batch windows (none while the reference was timed, none left running past an answer).
// Every other phase: kernels with their phase and launcher. In every phase, from the start: a
// driver call that hands device memory to another process (CUDA IPC, an export), which kgym's
// runners never make.
//
// The trace is authenticated (gpu/trace/trace_writer): each line is "<MAC> <TraceRecord
// JSON>" with a sequence number, under a key read at CUDA initialisation from a pipe. That
// happens before the candidate's code exists; the key then lives only in this library's
// memory (never in a Python object), and the executor, which got it from the zygote, checks
// every line, the order, the end record and the phase calls (gpu/profiler/trace_check).
#include <cupti.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu/trace/trace_writer.hpp"
#include "messages/kgym.pb.h"  // TracePhase's values only: nothing of protobuf is linked here

namespace {

struct launch_info {
  int phase = kgym::TRACE_UNTRACED;  // a TracePhase value
  int rep = 0;
  std::string launcher;  // the shared object that called the driver's launch
  bool generated = false;
  int cbid = 0;
};

std::mutex mutex;
std::unordered_map<uint32_t, launch_info> launches;  // by correlation id
int phase = kgym::TRACE_UNTRACED;  // the current call: a TracePhase value, and the rep of TRACE_TIMED
int phase_rep = 0;
std::string generated_root;
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

// Driver calls that let another process map this process's device memory; recorded from the
// library's start, whatever the phase (DeviceMemoryShared in kgym.proto).
const CUpti_CallbackId sharing_calls[] = {CUPTI_DRIVER_TRACE_CBID_cuIpcGetMemHandle,
                                          CUPTI_DRIVER_TRACE_CBID_cuMemExportToShareableHandle,
                                          CUPTI_DRIVER_TRACE_CBID_cuMemGetHandleForAddressRange};

bool is_sharing_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return domain == CUPTI_CB_DOMAIN_DRIVER_API &&
         std::find(std::begin(sharing_calls), std::end(sharing_calls), cbid) != std::end(sharing_calls);
}

enum class tracing { off, windows, full };

tracing tracing_of(int phase) {
  if (phase == kgym::TRACE_UNTRACED)
    return tracing::off;
  return phase == kgym::TRACE_BATCH || phase == kgym::TRACE_IDLE || phase == kgym::TRACE_DELIVER ? tracing::windows
                                                                                               : tracing::full;
}

const CUpti_ActivityKind copies[] = {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

void set_tracing(tracing mode) {
  const bool attribute = mode == tracing::full;
  for (auto cbid : driver_launches)
    cuptiEnableCallback(attribute ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  for (auto cbid : runtime_launches)
    cuptiEnableCallback(attribute ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  if (mode == tracing::off)
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  else
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  for (auto kind : copies) {
    if (mode == tracing::windows)
      cuptiActivityEnable(kind);
    else
      cuptiActivityDisable(kind);
  }
}

// Runtime launches (PyTorch's own kernels, cuBLAS) and driver launches (Triton) both pass
// here: every kernel of a traced phase gets its phase and its launcher.
void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) {
  if (data->callbackSite == CUPTI_API_ENTER && is_sharing_call(domain, cbid)) {
    std::string body = "\"shared\":{\"call\":";
    kgym::trace_writer::append_json_string(body, data->functionName ? data->functionName : "?");
    kgym::trace_writer::emit(body + "}");
    return;
  }
  if (data->callbackSite != CUPTI_API_ENTER || !traced.load(std::memory_order_relaxed))
    return;
  std::lock_guard<std::mutex> lock(mutex);
  if (launches.count(data->correlationId))
    return;  // a driver launch made by the runtime call already recorded
  launch_info info;
  info.phase = phase;
  info.rep = phase_rep;
  info.cbid = static_cast<int>(cbid) + (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 100000 : 0);
  info.launcher = calling_object();
  info.generated = !generated_root.empty() && info.launcher.rfind(generated_root, 0) == 0;
  launches[data->correlationId] = std::move(info);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

// CUPTI's copy kinds folded into the schema's CopyKind (a delivery may only copy device to device).
int copy_kind(uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return kgym::COPY_DEVICE_TO_DEVICE;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return kgym::COPY_HOST_TO_DEVICE;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return kgym::COPY_DEVICE_TO_HOST;
    default:
      return kgym::COPY_OTHER;
  }
}

// The record of a copy or memset (recorded in the batch and idle phases only): a kernel record
// named "[memcpy]" or "[memset]", with its bytes (and a copy's kind): the GPU was busy on the
// candidate's behalf all the same.
std::string copy_record(const CUpti_Activity* record) {
  uint64_t start, end, bytes;
  uint32_t stream, device, correlation;
  int kind = kgym::COPY_KIND_UNSPECIFIED;
  if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
    auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
    start = c->start, end = c->end, stream = c->streamId, device = c->deviceId, correlation = c->correlationId;
    bytes = c->bytes, kind = copy_kind(c->copyKind);
  } else {
    auto* c = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
    start = c->start, end = c->end, stream = c->streamId, device = c->deviceId, correlation = c->correlationId;
    bytes = c->bytes;
  }
  char body[360];
  std::snprintf(body, sizeof body,
                "\"kernel\":{\"start_ns\":%llu,\"end_ns\":%llu,\"stream\":%u,\"device\":%u,\"correlation\":%u,"
                "\"name\":\"%s\",\"phase\":%s,\"copy_kind\":%d,\"bytes\":%llu}",
                static_cast<unsigned long long>(start), static_cast<unsigned long long>(end), stream, device,
                correlation, record->kind == CUPTI_ACTIVITY_KIND_MEMCPY ? "[memcpy]" : "[memset]",
                kgym::trace_writer::phase_call_json(kgym::TRACE_UNTRACED, 0).c_str(), kind,
                static_cast<unsigned long long>(bytes));
  return body;
}

// Writes one completed activity buffer's records (one write call) and frees it. `mutex` is
// taken per record, for its launch's attribution only, so a phase call never waits for a
// whole buffer.
void write_buffer(uint8_t* buffer, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::vector<std::string> bodies;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY || record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      bodies.push_back(copy_record(record));
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
    launch_info info;
    bool attributed = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = launches.find(k->correlationId);
      if (it != launches.end()) {
        info = std::move(it->second);
        launches.erase(it);
        attributed = true;
      }
    }
    char numbers[512];
    std::snprintf(numbers, sizeof numbers,
                  "\"start_ns\":%llu,\"end_ns\":%llu,\"stream\":%u,\"device\":%u,\"correlation\":%u,"
                  "\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"cbid\":%d,\"generated\":%s,",
                  static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end), k->streamId,
                  k->deviceId, k->correlationId, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                  attributed ? info.cbid : 0, attributed && info.generated ? "true" : "false");
    std::string body = "\"kernel\":{";
    body += numbers;
    body += "\"name\":";
    kgym::trace_writer::append_json_string(body, k->name);
    body += ",\"phase\":";
    body += attributed ? kgym::trace_writer::phase_call_json(info.phase, info.rep)
                       : kgym::trace_writer::phase_call_json(kgym::TRACE_UNTRACED, 0);
    body += ",\"launcher\":";
    kgym::trace_writer::append_json_string(body, attributed ? info.launcher.c_str() : "");
    body += "}";
    bodies.push_back(std::move(body));
  }
  kgym::trace_writer::emit_all(bodies);
  std::free(buffer);
}

// Completed buffers wait here until the harness's last call (kgym_trace_finish) writes them:
// written when CUPTI completed them, their tens of thousands of records were formatted and
// written on the timed core in the middle of the timed batches, and a phase call waited for
// each whole buffer (H200, KernelBench level 3 LSTM and GRU, both sides: calls of 56 ms took
// 150-215 ms when a buffer completed in them). Past kMaxPendingBytes (a candidate that
// launches without end) they are written as they complete, the oldest first.
constexpr size_t kMaxPendingBytes = size_t{256} << 20;
std::mutex pending_mutex;
std::vector<std::pair<uint8_t*, size_t>> pending;  // (buffer, its valid bytes), in completion order
size_t pending_bytes = 0;

void write_pending() {
  std::vector<std::pair<uint8_t*, size_t>> buffers;
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    buffers.swap(pending);
    pending_bytes = 0;
  }
  for (auto& [buffer, valid] : buffers)
    write_buffer(buffer, valid);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    if (pending_bytes + size <= kMaxPendingBytes) {
      pending.emplace_back(buffer, valid);
      pending_bytes += size;
      return;
    }
  }
  write_pending();
  write_buffer(buffer, valid);
}

}  // namespace

extern "C" {

// Every call is recorded, with its time; the kind of tracing changes with the phase's.
__attribute__((visibility("default"))) void kgym_trace_set_phase(int kind, int rep) {
  tracing before, after = tracing_of(kind);
  {
    std::lock_guard<std::mutex> lock(mutex);
    before = tracing_of(phase);
    phase = kind;
    phase_rep = rep;
    uint64_t now = 0;
    cuptiGetTimestamp(&now);
    kgym::trace_writer::record_phase(kind, rep, now);  // every call, in order: the executor checks the protocol
    traced.store(after == tracing::full);
  }
  if (after != before)
    set_tracing(after);
}

// The harness's last call: every record flushed, then the end record.
__attribute__((visibility("default"))) int kgym_trace_finish() {
  cuptiActivityFlushAll(1);
  write_pending();
  return kgym::trace_writer::finish();
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  if (const char* root = std::getenv("KGYM_CUPTI_GENERATED_ROOT"))
    generated_root = root;
  kgym::trace_writer::start_from_environment();
  // Callbacks and activity records start with the first traced phase (kgym_trace_set_phase).
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_launch), nullptr) != CUPTI_SUCCESS)
    return 0;
  for (auto cbid : sharing_calls)
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  return 1;
}

}  // extern "C"
