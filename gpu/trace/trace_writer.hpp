// The writer of an authenticated trace, inside the evaluation process: the key comes from
// the pipe KGYM_TRACE_KEY_FD (read once, before the candidate's code exists), the file is
// KGYM_TRACE_FILE, and every record gets the next sequence number and a MAC
// (trace_mac.hpp). Shared by the CUPTI library (GPU) and libkgym_trace (CPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kgym::trace_writer {

// Reads the key and opens the file named by the environment; false (and no trace) when
// either is missing: an unauthenticated trace would be worth nothing to the executor.
bool start_from_environment();

// Writes one record, `body` being the JSON members after "seq"; nothing once finished.
// Thread-safe.
void emit(const std::string& body);

// Writes each of `bodies` as emit does, in order, with one write call for all of them (a
// buffer of kernel records is tens of thousands).
void emit_all(const std::vector<std::string>& bodies);

// A phase call (kgym.proto's PhaseCall: a TracePhase value, and the rep of TRACE_TIMED) in
// the schema's JSON mapping, as records hold it.
std::string phase_call_json(int kind, int rep);

// A phase call's record ("phase": the call, "at_ns": when, on the clock of the library's
// kernel records): every call, in order.
void record_phase(int kind, int rep, uint64_t at_ns);

// The end record, then the file is closed: nothing written after it is ours. -1 when
// there is no trace or it had ended.
int finish();

// JSON string literal of `text` appended to `out`.
void append_json_string(std::string& out, const char* text);

}  // namespace kgym::trace_writer
