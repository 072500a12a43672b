// libkgym_trace: the authenticated trace without CUDA, for CPU evaluations. It holds the
// harness's phase calls and the end record (no kernels: the CPU mode's evidence of what ran
// is the interpreter's launch record), so the executor can tell a finished evaluation from a
// result frame the candidate wrote itself. Loaded by the sandbox (ctypes) before the
// candidate's code; the CUPTI library (gpu/cupti) exports the same calls on the GPU.
#include <time.h>

#include "gpu/trace/trace_writer.hpp"

extern "C" {

__attribute__((visibility("default"))) int kgym_trace_start() {
  return kgym::trace_writer::start_from_environment() ? 0 : -1;
}

// `kind`: a TracePhase value (kgym.proto), `rep`: the rep of TRACE_TIMED.
__attribute__((visibility("default"))) void kgym_trace_set_phase(int kind, int rep) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  kgym::trace_writer::record_phase(kind, rep,
                                   static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec));
}

__attribute__((visibility("default"))) int kgym_trace_finish() { return kgym::trace_writer::finish(); }

}  // extern "C"
