#include "gpu/profiler/trace_check.hpp"

#include <sstream>
#include <utility>

#include "gpu/trace/trace_mac.hpp"
#include "gpu/profiler/trace_profile.hpp"
#include "gpu/profiler/untrusted_file.hpp"
#include "messages/evidence.hpp"
#include "messages/json.hpp"
#include "messages/trace_phase.hpp"

namespace kgym {

namespace {

// How many calls agree with the protocol from the start.
size_t common_prefix(const std::vector<PhaseCall>& calls, const std::vector<PhaseCall>& expected) {
  size_t at = 0;
  while (at < calls.size() && at < expected.size() && same_call(calls[at], expected[at]))
    ++at;
  return at;
}

void reject(checked_trace& trace, int line, const std::string& why) {
  if (trace.rejected++ == 0)
    trace.first_rejected = "line " + std::to_string(line) + ": " + why;
}

}  // namespace

checked_trace check_trace(const std::vector<std::string>& lines, const std::string& key) {
  checked_trace trace;
  const auto* key_bytes = reinterpret_cast<const uint8_t*>(key.data());
  uint64_t next = 0;
  int number = 0;
  for (const auto& line : lines) {
    ++number;
    if (line.empty())
      continue;
    ++trace.lines;
    auto space = line.find(' ');
    if (key.size() != trace_key_bytes || space != 16) {
      reject(trace, number, "not a MAC and a record");
      continue;
    }
    std::string record = line.substr(17);
    if (trace_mac_hex(key_bytes, record) != line.substr(0, 16)) {
      reject(trace, number, "the MAC does not match (not written by the trace writer)");
      continue;
    }
    TraceRecord r;
    if (!from_json_record(record, &r).empty()) {
      reject(trace, number, "authenticated, yet not a trace record");
      continue;
    }
    if (trace.ended) {
      reject(trace, number, "after the end record");
      continue;
    }
    if (r.seq() < next) {
      reject(trace, number, "record " + std::to_string(r.seq()) + " again (replayed or out of order)");
      continue;
    }
    if (r.seq() > next)  // taken, but what came between is missing
      reject(trace, number, "records " + std::to_string(next) + " to " + std::to_string(r.seq() - 1) + " missing");
    next = r.seq() + 1;
    if (r.has_kernel())
      trace.kernels.push_back(std::move(*r.mutable_kernel()));
    else if (r.what_case() == TraceRecord::kPhase) {
      trace.phase_calls.push_back(r.phase());
      trace.phase_at_ns.push_back(r.at_ns());
    }
    else if (r.has_end())
      trace.ended = r.end().records() == r.seq();
    else if (r.has_shared())
      trace.shared_calls.push_back(r.shared().call());
  }
  return trace;
}

std::vector<std::string> split_trace_lines(const std::string& bytes) {
  std::vector<std::string> lines;
  std::istringstream in(bytes);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::vector<std::string> trace_lines(const std::string& path) {
  return split_trace_lines(read_untrusted_file(path, max_trace_bytes).value_or(""));
}

std::string trace_key_from_hex(const std::string& hex) {
  if (hex.size() != 2 * trace_key_bytes)
    return {};
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 2) {
    auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return {};
    bytes.push_back(static_cast<char>(hi * 16 + lo));
  }
  return bytes;
}

checked_trace read_checked_trace(const std::string& path, const std::string& key_hex) {
  return check_trace(trace_lines(path), trace_key_from_hex(key_hex));
}

ProfileReport profile_of(const checked_trace& trace) {
  ProfileReport report = profile_from_trace(trace.kernels);
  report.set_trace_lines_rejected(trace.rejected);
  report.set_trace_ended(trace.ended);
  return report;
}

std::vector<PhaseCall> expected_phase_calls(int trials, int batches, int traced_reps) {
  std::vector<PhaseCall> calls;
  for (int t = 0; t < trials; ++t)
    calls.insert(calls.end(), {phase_call(TRACE_TRAIN), phase_call(TRACE_CHECKS), phase_call(TRACE_EVAL),
                               phase_call(TRACE_CHECKS)});
  for (int b = 0; b < batches; ++b)
    calls.insert(calls.end(), {phase_call(TRACE_BATCH), phase_call(TRACE_IDLE)});
  for (int r = 0; r < traced_reps; ++r)
    calls.insert(calls.end(), {phase_call(TRACE_TIMED, r), phase_call(TRACE_CHECKS)});
  calls.push_back(phase_call(TRACE_UNTRACED));
  return calls;
}

std::vector<bool> delivery_openings(const std::vector<PhaseCall>& calls) {
  std::vector<bool> opens(calls.size(), false);
  for (size_t i = 2; i < calls.size(); ++i)
    opens[i] = calls[i].kind() == TRACE_DELIVER && calls[i - 1].kind() == TRACE_IDLE &&
               (calls[i - 2].kind() == TRACE_BATCH || opens[i - 2]);
  return opens;
}

std::vector<PhaseCall> without_deliveries(const std::vector<PhaseCall>& calls) {
  const auto opens = delivery_openings(calls);
  std::vector<PhaseCall> kept;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!opens[i]) {
      kept.push_back(calls[i]);
      continue;
    }
    if (i + 1 < calls.size() && calls[i + 1].kind() == TRACE_IDLE)
      ++i;  // its idle call goes with it
  }
  return kept;
}

std::string phase_protocol(const std::vector<PhaseCall>& all_calls, const std::vector<PhaseCall>& expected) {
  const auto calls = without_deliveries(all_calls);
  const size_t same = common_prefix(calls, expected);
  if (same == calls.size() && same == expected.size())
    return "complete";
  bool closed_early = !calls.empty() && calls.size() <= expected.size() && calls.back().kind() == TRACE_UNTRACED;
  if (same == calls.size() || (closed_early && same + 1 >= calls.size()))
    return "partial";
  return "deviates";
}

void apply_trace_integrity(const checked_trace& trace, const std::vector<PhaseCall>& expected,
                           bool no_hacking_check, ExecResult* result) {
  auto hack = [&](EvidenceKind kind, const std::string& detail, const std::string& message) {
    add_evidence(result, kind, detail, "executor");
    if (!no_hacking_check && result->verdict() != HACKED)
      mark_hacked(result, PHASE_PROFILE, message);
  };
  if (trace.rejected > 0)
    hack(TRACE_FORGED,
         std::to_string(trace.rejected) + " of " + std::to_string(trace.lines) + " trace lines rejected; " +
             trace.first_rejected,
         "the trace holds lines the trace writer did not write");
  if (!trace.shared_calls.empty())
    hack(DEVICE_MEMORY_SHARED, first_and_more(trace.shared_calls),
         "its process handed device memory to another process (" + trace.shared_calls.front() + ")");
  std::string protocol = phase_protocol(trace.phase_calls, expected);
  const auto calls = without_deliveries(trace.phase_calls);
  const size_t at = common_prefix(calls, expected);
  if (protocol == "deviates")
    hack(PHASE_SEQUENCE,
         "phase call " + std::to_string(at + 1) + " was '" +
             (at < calls.size() ? trace_phase_name(calls[at]) : std::string("(none)")) +
             "', the harness's is '" + (at < expected.size() ? trace_phase_name(expected[at]) : std::string("(none)")) +
             "'",
         "the profiler's phases were set by someone other than the harness");
  else if (result->verdict() == OK && (protocol != "complete" || !trace.ended))
    hack(TRACE_INCOMPLETE,
         std::string(trace.ended ? "the trace ended" : "the trace has no end record") + " after " +
             std::to_string(calls.size()) + " of the harness's " + std::to_string(expected.size()) +
             " phase calls",
         "a result arrived for an evaluation the trace shows unfinished");
}

}  // namespace kgym
