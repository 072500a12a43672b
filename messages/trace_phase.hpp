// The candidate process's trace phases (kgym.proto: TracePhase, PhaseCall) as values and as
// the names the executor's messages and ProfileReport.phase_gpu_ms use.
#pragma once

#include <string>

#include "messages/enum_names.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

inline PhaseCall phase_call(TracePhase kind, int rep = 0) {
  PhaseCall call;
  call.set_kind(kind);
  call.set_rep(rep);
  return call;
}

inline bool same_call(const PhaseCall& a, const PhaseCall& b) { return a.kind() == b.kind() && a.rep() == b.rep(); }

// "batch" for TRACE_BATCH, "timed:3" for rep 3 of TRACE_TIMED (kgym.proto says so at TracePhase).
inline std::string trace_phase_name(const PhaseCall& call) {
  std::string name = lower_name(call.kind());
  if (name.rfind("trace_", 0) == 0)
    name = name.substr(6);
  return call.kind() == TRACE_TIMED ? name + ":" + std::to_string(call.rep()) : name;
}

}  // namespace kgym
