// Pure checks of an authenticated CUPTI trace (gpu/cupti): is every line the library's, in
// order, to the end, and did the phase calls follow the harness's protocol?
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// What an authenticated trace holds, and what in it was not written by the library.
struct checked_trace {
  std::vector<KernelActivity> kernels;   // from authenticated lines only
  std::vector<PhaseCall> phase_calls;    // kgym_trace_set_phase calls, in order
  std::vector<uint64_t> phase_at_ns;     // when each was made (the kernels' clock)
  std::vector<std::string> shared_calls; // driver calls that handed device memory to another process
  bool ended = false;                    // the end record came, with the right count
  int lines = 0;                         // non-empty lines read
  int rejected = 0;                      // lines not taken: bad MAC, wrong place, after the end
  std::string first_rejected;            // why the first one was not taken, e.g. "line 7: ..."
};

// `key` holds the 16 key bytes. A line is taken when its MAC matches and its sequence
// number is the next one; a line that skips numbers is taken, and the gap is a rejection
// (lines went missing).
checked_trace check_trace(const std::vector<std::string>& lines, const std::string& key);

// A trace file is read up to this size (a level-3 model's CUPTI trace is a few MiB); what lies
// beyond is not read, so the trace's end record is missing.
constexpr size_t max_trace_bytes = size_t{256} << 20;

// A trace's bytes (as read from its file), line by line.
std::vector<std::string> split_trace_lines(const std::string& bytes);

// The lines of a trace file (read_untrusted_file: a link or a FIFO in its place is no trace);
// none when it is missing.
std::vector<std::string> trace_lines(const std::string& path);

// Bytes from hex ("" when it is not hex of the right length).
std::string trace_key_from_hex(const std::string& hex);

// The trace file at `path`, checked under the key (hex).
checked_trace read_checked_trace(const std::string& path, const std::string& key_hex);

// The ProfileReport of the authenticated kernels, with the trace's integrity in it.
ProfileReport profile_of(const checked_trace& trace);

// The candidate process's phase calls for a whole evaluation (candidate_runner.py, as the
// judge drives it in evaluate.py): per correctness trial train, checks, eval, checks; per
// timed batch (as many as the judge reports timing) batch, idle (on the GPU then deliver,
// idle, which phase_protocol leaves out: without_deliveries); per traced rep timed:<i>,
// checks (GPU only: none on the CPU); untraced before the trace ends.
std::vector<PhaseCall> expected_phase_calls(int trials, int batches, int traced_reps);

// Per call, whether it opens one of a batch's deliveries (GPU): a deliver call right after that
// batch's idle call, or right after the idle call that closed the batch's previous delivery (the
// judge names the outputs it compares a few at a time when its buffers are fewer). Linear.
std::vector<bool> delivery_openings(const std::vector<PhaseCall>& calls);

// The calls without the GPU's deliveries: each call delivery_openings marks, and the idle call
// after it (request_windows checks what ran there). A deliver call anywhere else stays, off
// the protocol.
std::vector<PhaseCall> without_deliveries(const std::vector<PhaseCall>& calls);

// How the recorded calls (without_deliveries) relate to the protocol: "complete" (all of it),
// "partial" (a prefix of it, perhaps closed by the final untraced: an evaluation that stopped
// early), or "deviates" (calls the harness does not make: the candidate called the library).
std::string phase_protocol(const std::vector<PhaseCall>& calls, const std::vector<PhaseCall>& expected);

// Applies the trace's integrity to a result (the evidence is kept even with the check off):
// rejected lines -> HACKED "trace_forged"; calls off the protocol -> HACKED "phase_sequence";
// device memory handed to another process -> HACKED "device_memory_shared";
// a result the sandbox found OK whose trace did not end or did not see the whole protocol
// -> HACKED "trace_incomplete" (it was sent before the evaluation finished: forged).
void apply_trace_integrity(const checked_trace& trace, const std::vector<PhaseCall>& expected,
                           bool no_hacking_check, ExecResult* result);

}  // namespace kgym
