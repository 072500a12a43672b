// The authenticated CUPTI trace, checked with exact expectations: SipHash-2-4 against its
// published vectors, then every way a trace line can be forged, dropped, replayed or moved,
// and what each does to a result.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "gpu/trace/trace_mac.hpp"
#include "gpu/trace/trace_writer.hpp"
#include "gpu/profiler/batch_launches.hpp"
#include "gpu/profiler/request_windows.hpp"
#include "gpu/profiler/trace_check.hpp"
#include "messages/trace_phase.hpp"
#include "tests/test_support.hpp"

namespace kgym::test {
namespace {

std::string key_of(uint8_t first) {
  std::string key;
  for (uint8_t i = 0; i < trace_key_bytes; ++i)
    key.push_back(static_cast<char>(first + i));
  return key;
}

const std::string key = key_of(0);

std::string signed_line(const std::string& record, const std::string& with = key) {
  return trace_mac_hex(reinterpret_cast<const uint8_t*>(with.data()), record) + " " + record;
}

std::string kernel_record(int seq, const std::string& phase, bool generated) {
  return "{\"seq\":" + std::to_string(seq) + ",\"kernel\":{\"name\":\"k\",\"start_ns\":\"100\",\"end_ns\":\"300\"," +
         "\"generated\":" + (generated ? "true" : "false") + ",\"phase\":" + phase_json(phase) + "}}";
}

std::string phase_record(int seq, const std::string& phase) {
  return "{\"seq\":" + std::to_string(seq) + ",\"phase\":" + phase_json(phase) + "}";
}

std::string end_record(int seq) {
  return "{\"seq\":" + std::to_string(seq) + ",\"end\":{\"records\":" + std::to_string(seq) + "}}";
}

// A small whole trace: two phase calls, one kernel, the end.
std::vector<std::string> honest_lines() {
  return {signed_line(phase_record(0, "train")), signed_line(kernel_record(1, "train", true)),
          signed_line(phase_record(2, "untraced")), signed_line(end_record(3))};
}

TEST(SipHash, MatchesThePublishedVectors) {
  // Key 00..0f (Aumasson and Bernstein's test key): the empty message and the paper's
  // 15-byte example 00..0e.
  const auto* k = reinterpret_cast<const uint8_t*>(key.data());
  EXPECT_EQ(siphash24(k, "", 0), 0x726fdb47dd0e0e31ULL);
  std::string fifteen;
  for (char c = 0; c < 15; ++c)
    fifteen.push_back(c);
  EXPECT_EQ(siphash24(k, fifteen.data(), fifteen.size()), 0xa129ca6149be45e5ULL);
  EXPECT_EQ(trace_mac_hex(k, fifteen), "a129ca6149be45e5");
}

TEST(TraceCheck, TakesAnHonestTraceWhole) {
  auto trace = check_trace(honest_lines(), key);
  EXPECT_EQ(trace.rejected, 0) << trace.first_rejected;
  EXPECT_EQ(trace.lines, 4);
  EXPECT_TRUE(trace.ended);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_TRUE(trace.kernels[0].generated());
  EXPECT_EQ(trace.kernels[0].end_ns(), 300u);
  EXPECT_EQ(phase_names(trace.phase_calls), (std::vector<std::string>{"train", "untraced"}));
}

// The writer in the libraries, as the CUPTI library uses it: phase calls one at a time, a
// buffer's kernel records in one emit_all; the check takes every line, in order.
TEST(TraceWriter, WritesLinesTheCheckTakesOneByOneAndAllAtOnce) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ASSERT_EQ(::write(pipe_fds[1], key.data(), key.size()), static_cast<ssize_t>(key.size()));
  ::close(pipe_fds[1]);
  const auto path = std::filesystem::temp_directory_path() / ("kgym_trace_writer_" + std::to_string(::getpid()));
  ::setenv("KGYM_TRACE_KEY_FD", std::to_string(pipe_fds[0]).c_str(), 1);
  ::setenv("KGYM_TRACE_FILE", path.c_str(), 1);
  ASSERT_TRUE(trace_writer::start_from_environment());
  auto kernel = [](const char* name, const std::string& phase) {
    return std::string("\"kernel\":{\"name\":\"") + name + "\",\"start_ns\":\"100\",\"end_ns\":\"300\"," +
           "\"generated\":true,\"phase\":" + phase + "}";
  };
  trace_writer::record_phase(TRACE_TIMED, 2, 50);
  trace_writer::emit_all({kernel("a", trace_writer::phase_call_json(TRACE_TIMED, 2)),
                          kernel("b", trace_writer::phase_call_json(TRACE_TIMED, 2))});
  trace_writer::emit_all({});
  trace_writer::record_phase(TRACE_UNTRACED, 0, 400);
  ASSERT_EQ(trace_writer::finish(), 0);
  trace_writer::emit_all({kernel("late", trace_writer::phase_call_json(TRACE_UNTRACED, 0))});  // after the end: nothing

  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 5u);
  auto trace = check_trace(lines, key);
  EXPECT_EQ(trace.rejected, 0) << trace.first_rejected;
  EXPECT_TRUE(trace.ended);
  ASSERT_EQ(trace.kernels.size(), 2u);
  EXPECT_EQ(trace.kernels[0].name(), "a");
  EXPECT_EQ(trace.kernels[1].name(), "b");
  EXPECT_EQ(trace.kernels[1].phase().rep(), 2);
  EXPECT_EQ(trace.phase_calls.size(), 2u);
}

TEST(TraceCheck, RejectsWhatTheLibraryDidNotWrite) {
  // A changed byte: the forged kernel claims to be generated.
  auto lines = honest_lines();
  auto forged = lines[1];
  forged.replace(forged.find("true"), 4, "TRUE");
  auto edited = check_trace({lines[0], forged, lines[2], lines[3]}, key);
  EXPECT_EQ(edited.rejected, 2);  // the forged line, and the record it replaced missing
  EXPECT_EQ(edited.first_rejected, "line 2: the MAC does not match (not written by the trace writer)");
  EXPECT_TRUE(edited.kernels.empty());
  // A line with no MAC, one signed with another key, one that is not a record.
  auto inserted = check_trace({lines[0], kernel_record(1, "train", true), lines[1], lines[2], lines[3]}, key);
  EXPECT_EQ(inserted.rejected, 1);
  EXPECT_EQ(inserted.first_rejected, "line 2: not a MAC and a record");
  EXPECT_EQ(inserted.kernels.size(), 1u);  // the real one
  auto other_key = check_trace({signed_line(kernel_record(0, "eval", true), key_of(1))}, key);
  EXPECT_EQ(other_key.rejected, 1);
  EXPECT_TRUE(other_key.kernels.empty());
  auto not_a_record = check_trace({signed_line("{\"seq\":0,\"verdict\":\"OK\"}")}, key);
  EXPECT_EQ(not_a_record.first_rejected, "line 1: authenticated, yet not a trace record");
  // No key at all (the zygote sent none): nothing can be taken.
  EXPECT_EQ(check_trace(lines, "").rejected, 4);
}

TEST(TraceCheck, RejectsReplayedMissingAndLateLines) {
  auto lines = honest_lines();
  auto replayed = check_trace({lines[0], lines[1], lines[1], lines[2], lines[3]}, key);
  EXPECT_EQ(replayed.rejected, 1);
  EXPECT_EQ(replayed.first_rejected, "line 3: record 1 again (replayed or out of order)");
  EXPECT_EQ(replayed.kernels.size(), 1u);
  auto dropped = check_trace({lines[0], lines[2], lines[3]}, key);  // the kernel deleted
  EXPECT_EQ(dropped.rejected, 1);
  EXPECT_EQ(dropped.first_rejected, "line 2: records 1 to 1 missing");
  EXPECT_TRUE(dropped.ended);
  auto moved = check_trace({lines[1], lines[0], lines[2], lines[3]}, key);
  EXPECT_EQ(moved.rejected, 2);  // 0 missing before 1, then 0 again
  auto late = check_trace({lines[0], lines[1], lines[2], lines[3], signed_line(kernel_record(4, "eval", true))}, key);
  EXPECT_EQ(late.first_rejected, "line 5: after the end record");
  auto cut = check_trace({lines[0], lines[1]}, key);
  EXPECT_EQ(cut.rejected, 0);
  EXPECT_FALSE(cut.ended);
  auto miscounted = check_trace({lines[0], signed_line("{\"seq\":1,\"end\":{\"records\":5}}")}, key);
  EXPECT_FALSE(miscounted.ended);
}

TEST(TraceCheck, KnowsTheHarnesssPhaseCalls) {
  EXPECT_EQ(phase_names(expected_phase_calls(2, 2, 1)),
            (std::vector<std::string>{"train", "checks", "eval", "checks", "train", "checks", "eval", "checks",
                                      "batch", "idle", "batch", "idle", "timed:0", "checks", "untraced"}));
  EXPECT_EQ(phase_names(expected_phase_calls(1, 1, 0)),
            (std::vector<std::string>{"train", "checks", "eval", "checks", "batch", "idle", "untraced"}));
  auto expected = expected_phase_calls(1, 3, 2);
  EXPECT_EQ(phase_protocol(expected, expected), "complete");
  EXPECT_EQ(phase_protocol({}, expected), "partial");
  EXPECT_EQ(phase_protocol(phase_calls_named({"train"}), expected), "partial");                        // killed
  EXPECT_EQ(phase_protocol(phase_calls_named({"train", "checks", "untraced"}), expected), "partial");  // failed
  EXPECT_EQ(phase_protocol(phase_calls_named({"untraced"}), expected), "partial");                     // did not load
  EXPECT_EQ(phase_protocol(phase_calls_named({"train", "untraced", "train"}), expected), "deviates");
  EXPECT_EQ(phase_protocol(phase_calls_named({"eval"}), expected), "deviates");
  // An idle call moved (e.g. to just before the next batch) still reads in order; the
  // windows' times catch that (RequestWindows below). One missing does not.
  EXPECT_EQ(phase_protocol(phase_calls_named({"train", "checks", "eval", "checks", "batch", "batch"}), expected), "deviates");
  auto longer = expected;
  longer.push_back(phase_call(TRACE_UNTRACED));
  EXPECT_EQ(phase_protocol(longer, expected), "deviates");
}

// On the GPU each batch's outputs reach the judge on a delivery of its own (deliver, idle right
// after the batch's idle call): the protocol reads without them, in the old traces and the new.
TEST(TraceCheck, LeavesEachBatchsDeliveryOutOfTheProtocol) {
  const auto expected = expected_phase_calls(1, 2, 1);
  const auto delivered = phase_calls_named({"train", "checks", "eval", "checks", "batch", "idle", "deliver", "idle",
                                            "batch", "idle", "deliver", "idle", "timed:0", "checks", "untraced"});
  EXPECT_EQ(phase_names(without_deliveries(delivered)), phase_names(expected));
  EXPECT_EQ(phase_protocol(delivered, expected), "complete");
  EXPECT_EQ(phase_protocol(expected, expected), "complete");  // the CPU's: no deliveries
  // Killed in its first delivery: a prefix.
  EXPECT_EQ(phase_protocol(phase_calls_named({"train", "checks", "eval", "checks", "batch", "idle", "deliver"}),
                           expected),
            "partial");
  // A batch's outputs delivered a few at a time (the judge's buffers fewer than the calls it
  // compares): each delivery right after the idle call that closed the one before.
  const auto in_parts = phase_calls_named({"train", "checks", "eval", "checks", "batch", "idle", "deliver", "idle",
                                           "deliver", "idle", "deliver", "idle", "batch", "idle", "deliver", "idle",
                                           "timed:0", "checks", "untraced"});
  EXPECT_EQ(phase_names(without_deliveries(in_parts)), phase_names(expected));
  EXPECT_EQ(phase_protocol(in_parts, expected), "complete");
  // A deliver call anywhere else is not the harness's.
  EXPECT_EQ(phase_protocol(phase_calls_named({"train", "checks", "deliver", "eval"}), expected), "deviates");
  EXPECT_EQ(phase_protocol(phase_calls_named({"train", "checks", "eval", "checks", "batch", "idle", "deliver",
                                              "deliver", "idle"}),
                           expected),
            "deviates");
  EXPECT_EQ(phase_protocol(phase_calls_named({"train", "checks", "eval", "checks", "batch", "idle", "batch", "idle",
                                              "timed:0", "checks", "deliver", "idle"}),
                           expected),
            "deviates");
}

ExecResult result_with(Verdict verdict) {
  ExecResult r;
  r.set_verdict(verdict);
  r.set_correct(verdict == OK);
  return r;
}

checked_trace trace_with(std::vector<PhaseCall> calls, bool ended, int rejected = 0) {
  checked_trace t;
  t.phase_calls = std::move(calls);
  t.ended = ended;
  t.rejected = rejected;
  t.lines = 10;
  t.first_rejected = rejected ? "line 3: the MAC does not match (not written by the trace writer)" : "";
  return t;
}

TEST(TraceCheck, JudgesResultsByTheirTrace) {
  const auto expected = expected_phase_calls(1, 1, 1);
  auto whole = result_with(OK);
  apply_trace_integrity(trace_with(expected, true), expected, false, &whole);
  EXPECT_EQ(Verdict_Name(whole.verdict()), "OK");
  EXPECT_EQ(whole.evidence_size(), 0);

  // A result that came before the evaluation ended: sent by the candidate.
  auto early = result_with(OK);
  apply_trace_integrity(trace_with(phase_calls_named({"train", "checks"}), false), expected, false, &early);
  EXPECT_EQ(Verdict_Name(early.verdict()), "HACKED");
  EXPECT_FALSE(early.correct());
  ASSERT_EQ(early.evidence_size(), 1);
  EXPECT_EQ(early.evidence(0).kind(), TRACE_INCOMPLETE);
  EXPECT_EQ(early.evidence(0).detail(), "the trace has no end record after 2 of the harness's 9 phase calls");
  auto unended = result_with(OK);
  apply_trace_integrity(trace_with(expected, false), expected, false, &unended);
  EXPECT_EQ(Verdict_Name(unended.verdict()), "HACKED");

  // An evaluation that failed early: its trace stops early, and that is no finding.
  auto failed = result_with(INCORRECT);
  apply_trace_integrity(trace_with(phase_calls_named({"train", "checks", "untraced"}), true), expected, false, &failed);
  EXPECT_EQ(Verdict_Name(failed.verdict()), "INCORRECT");
  EXPECT_EQ(failed.evidence_size(), 0);

  auto relabelled = result_with(OK);
  apply_trace_integrity(trace_with(phase_calls_named({"train", "untraced", "train"}), true), expected, false, &relabelled);
  EXPECT_EQ(Verdict_Name(relabelled.verdict()), "HACKED");
  ASSERT_EQ(relabelled.evidence_size(), 1);
  EXPECT_EQ(relabelled.evidence(0).kind(), PHASE_SEQUENCE);
  EXPECT_EQ(relabelled.evidence(0).detail(), "phase call 2 was 'untraced', the harness's is 'checks'");

  auto forged = result_with(INCORRECT);
  apply_trace_integrity(trace_with(expected, true, 2), expected, false, &forged);
  EXPECT_EQ(Verdict_Name(forged.verdict()), "HACKED");
  ASSERT_EQ(forged.evidence_size(), 1);
  EXPECT_EQ(forged.evidence(0).kind(), TRACE_FORGED);
  EXPECT_EQ(forged.evidence(0).detail(),
            "2 of 10 trace lines rejected; line 3: the MAC does not match (not written by the trace writer)");

  // The ablation keeps the evidence and the verdict.
  auto ablation = result_with(OK);
  apply_trace_integrity(trace_with(phase_calls_named({"train"}), false, 1), expected, true, &ablation);
  EXPECT_EQ(Verdict_Name(ablation.verdict()), "OK");
  EXPECT_EQ(ablation.evidence_size(), 2);  // trace_forged, trace_incomplete
}

// A driver call that hands device memory to another process (hostile works_in_helper's CUDA
// IPC): read from its authenticated line wherever it falls, and HACKED; a forged one is no
// finding of this kind (the forgery is).
TEST(TraceCheck, DeviceMemoryHandedToAnotherProcessIsHacking) {
  auto shared_record = [](int seq, const std::string& call) {
    return "{\"seq\":" + std::to_string(seq) + ",\"shared\":{\"call\":\"" + call + "\"}}";
  };
  const std::vector<std::string> lines = {signed_line(shared_record(0, "cuIpcGetMemHandle")),
                                          signed_line(phase_record(1, "train")),
                                          signed_line(shared_record(2, "cuMemExportToShareableHandle")),
                                          signed_line(phase_record(3, "untraced")), signed_line(end_record(4))};
  auto trace = check_trace(lines, key);
  EXPECT_EQ(trace.rejected, 0);
  EXPECT_TRUE(trace.ended);
  ASSERT_EQ(trace.shared_calls.size(), 2u);
  EXPECT_EQ(trace.shared_calls[1], "cuMemExportToShareableHandle");
  const auto expected = phase_calls_named({"train", "untraced"});
  auto result = result_with(OK);
  apply_trace_integrity(trace, expected, false, &result);
  EXPECT_EQ(Verdict_Name(result.verdict()), "HACKED");
  ASSERT_EQ(result.evidence_size(), 1);
  EXPECT_EQ(result.evidence(0).kind(), DEVICE_MEMORY_SHARED);
  EXPECT_EQ(result.evidence(0).detail(), "cuIpcGetMemHandle and 1 more");
  EXPECT_EQ(result.message(), "its process handed device memory to another process (cuIpcGetMemHandle)");

  auto honest = result_with(OK);
  apply_trace_integrity(check_trace(honest_lines(), key), phase_calls_named({"train", "untraced"}), false, &honest);
  EXPECT_EQ(Verdict_Name(honest.verdict()), "OK");

  std::vector<std::string> forged = lines;
  forged[0] = signed_line(shared_record(0, "cuIpcGetMemHandle"), key_of(7));
  auto forged_trace = check_trace(forged, key);
  EXPECT_EQ(forged_trace.shared_calls.size(), 1u);
  EXPECT_EQ(forged_trace.rejected, 2);  // the line itself, and the gap it leaves before record 1
}

// A real H100 trace of the lazy GEMM (cuBLAS does the work): relabelling the library's
// kernels as the candidate's own in the file is what a forger would do; none of it is taken.
TEST(TraceCheck, ARecordedTraceEditedInPlaceLosesTheEditedLines) {
  const std::string name = source_path("tests/data/traces/matmul_bias_relu_lazy");
  const std::string key_hex = read_text(name + ".key").substr(0, 32);
  auto lines = trace_lines(name + ".jsonl");
  auto honest = check_trace(lines, trace_key_from_hex(key_hex));
  ASSERT_EQ(honest.rejected, 0);
  EXPECT_LT(profile_of(honest).coverage(), 0.02);
  int edited = 0;
  for (auto& line : lines) {
    auto at = line.find("\"generated\":false");
    if (at != std::string::npos && line.find("\"phase\":{\"kind\":2,") != std::string::npos) {  // TRACE_TRAIN
      line.replace(at, 18, "\"generated\":true");
      ++edited;
    }
  }
  ASSERT_GT(edited, 0);
  auto forged = check_trace(lines, trace_key_from_hex(key_hex));
  EXPECT_GE(forged.rejected, edited);
  EXPECT_EQ(forged.first_rejected.find("the MAC does not match"), forged.first_rejected.find(": ") + 2);
  // Unedited lines stay: still lazy, nowhere near the full coverage the edit claims (the
  // dropped train-mode lines lift it a little), and the verdict is HACKED below anyway.
  EXPECT_LT(profile_of(forged).coverage(), 0.1);
  ExecResult r;
  r.set_verdict(OK);
  apply_trace_integrity(forged, expected_phase_calls(5, 4, 5), false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED");
  EXPECT_EQ(r.evidence(0).kind(), TRACE_FORGED);
}

// The timing section as a trace shows it: windows [1, 2] and [5, 6] ms (batch and idle
// calls), the traced reps from 9 ms; the judge's requests took 1.2 ms each.
checked_trace timing_trace(std::vector<std::pair<uint64_t, uint64_t>> kernels_ns) {
  checked_trace t;
  t.phase_calls = phase_calls_named({"checks", "batch", "idle", "batch", "idle", "timed:0", "checks", "untraced"});
  t.phase_at_ns = {500'000, 1'000'000, 2'000'000, 5'000'000, 6'000'000, 9'000'000, 9'500'000, 9'600'000};
  for (auto [start, end] : kernels_ns) {
    KernelActivity k;
    k.set_name("k");
    k.set_start_ns(start);
    k.set_end_ns(end);
    t.kernels.push_back(k);
  }
  return t;
}

const std::vector<double> judge_ms = {1.2, 1.2};

TEST(RequestWindows, TakeWorkInsideTheCandidatesOwnWindows) {
  // Its batches' kernels, one ending within the slack after its window closed, and work
  // before the timing (correctness) and in the traced reps, which are not this check's.
  auto found = check_request_windows(
      timing_trace({{1'100'000, 1'900'000}, {5'100'000, 6'030'000}, {400'000, 600'000}, {9'100'000, 9'200'000}}),
      judge_ms);
  EXPECT_EQ(found.windows, 2);
  EXPECT_EQ(found.outside, 0) << found.first_outside;
  EXPECT_EQ(found.longer, 0) << found.first_longer;
  ExecResult r = result_with(OK);
  apply_request_windows(found, false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "OK");
  EXPECT_EQ(r.evidence_size(), 0);
}

TEST(RequestWindows, FindWorkBetweenRequestsAndWorkLeftRunning) {
  // Background work while the reference was timed (3 to 3.5 ms), work deferred past an
  // answer (1.9 to 2.2 ms), work begun before the first batch that runs into it.
  auto found = check_request_windows(
      timing_trace({{1'100'000, 1'900'000}, {3'000'000, 3'500'000}, {1'900'000, 2'200'000}, {800'000, 1'500'000}}),
      judge_ms);
  EXPECT_EQ(found.outside, 3);
  EXPECT_NEAR(found.outside_ms, 0.5 + 0.3 + 0.7, 1e-9);
  EXPECT_EQ(found.first_outside, "'k' (0.500 ms) ran from 2.000 to 2.500 ms after batch 0 opened (it closed at 1.000 ms)");
  EXPECT_EQ(check_request_windows(timing_trace({{800'000, 1'500'000}}), judge_ms).first_outside,
            "'k' (0.700 ms) began before the first batch");
  // Between the last window and the traced reps (the judge's last checks) counts too.
  EXPECT_EQ(check_request_windows(timing_trace({{7'000'000, 7'100'000}}), judge_ms).outside, 1);
  ExecResult r = result_with(OK);
  apply_request_windows(found, false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED");
  EXPECT_EQ(r.failed_phase(), PHASE_TIMING);
  ASSERT_EQ(r.evidence_size(), 1);
  EXPECT_EQ(r.evidence(0).kind(), GPU_WORK_BETWEEN_REQUESTS);
  EXPECT_EQ(r.evidence(0).source(), "cupti");
  EXPECT_EQ(r.evidence(0).detail(), "3 kernels or copies (1.500 ms of GPU time) outside the candidate's 2 batch windows; " +
                                        found.first_outside);
  // A failed evaluation keeps its verdict; the ablation keeps OK and the evidence.
  ExecResult failed = result_with(INCORRECT);
  apply_request_windows(found, false, &failed);
  EXPECT_EQ(Verdict_Name(failed.verdict()), "INCORRECT");
  ExecResult ablation = result_with(OK);
  apply_request_windows(found, true, &ablation);
  EXPECT_EQ(Verdict_Name(ablation.verdict()), "OK");
  EXPECT_EQ(ablation.evidence_size(), 1);
}

TEST(RequestWindows, FindAWindowLongerThanItsRequest) {
  // The second idle call held back until just before the traced reps: its window covers the
  // time after its answer, longer than the judge's clock around the request.
  auto trace = timing_trace({{5'100'000, 8'000'000}});
  trace.phase_at_ns[4] = 8'900'000;
  auto found = check_request_windows(trace, judge_ms);
  EXPECT_EQ(found.outside, 0);
  EXPECT_EQ(found.longer, 1);
  EXPECT_EQ(found.first_longer, "batch 1: its window in the trace lasted 3.900 ms, the judge's request 1.200 ms");
  ExecResult r = result_with(OK);
  apply_request_windows(found, false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED");
  EXPECT_EQ(r.evidence(0).kind(), BATCH_WINDOW_LONGER_THAN_REQUEST);
  // Within the slack it stands.
  EXPECT_EQ(check_request_windows(timing_trace({}), {0.96, 0.96}).longer, 0);
  EXPECT_EQ(check_request_windows(timing_trace({}), {0.94, 0.96}).longer, 1);
}

// Deliveries: windows [2.2, 2.6] and [6.2, 6.6] ms after the batches' (the deliver and idle
// calls), the judge's delivery requests 0.5 ms each, two copies of 4 KiB together each at most.
struct gpu_work {
  std::string name;
  uint64_t start_ns, end_ns;
  CopyKind copy_kind = COPY_KIND_UNSPECIFIED;
  uint64_t bytes = 0;
};

gpu_work device_copy(uint64_t start_ns, uint64_t end_ns, uint64_t bytes = 2048) {
  return {"[memcpy]", start_ns, end_ns, COPY_DEVICE_TO_DEVICE, bytes};
}

checked_trace delivered_trace(const std::vector<gpu_work>& work) {
  checked_trace t;
  t.phase_calls = phase_calls_named({"checks", "batch", "idle", "deliver", "idle", "batch", "idle", "deliver", "idle",
                                     "timed:0", "checks", "untraced"});
  t.phase_at_ns = {500'000, 1'000'000, 2'000'000, 2'200'000, 2'600'000, 5'000'000, 6'000'000, 6'200'000, 6'600'000,
                   9'000'000, 9'500'000, 9'600'000};
  for (const auto& w : work) {
    KernelActivity k;
    k.set_name(w.name);
    k.set_start_ns(w.start_ns);
    k.set_end_ns(w.end_ns);
    k.set_copy_kind(w.copy_kind);
    k.set_bytes(w.bytes);
    t.kernels.push_back(k);
  }
  return t;
}

const delivery_limits two_copies{{0.5, 0.5}, 2, 4096};

TEST(RequestWindows, LetADeliveryCopyItsOutputsAndNothingElse) {
  auto honest = check_request_windows(delivered_trace({{"k", 1'100'000, 1'900'000},
                                                       device_copy(2'250'000, 2'400'000),
                                                       device_copy(2'400'000, 2'550'000),
                                                       {"k", 5'100'000, 5'900'000},
                                                       device_copy(6'300'000, 6'500'000, 4096)}),
                                      judge_ms, two_copies);
  EXPECT_EQ(honest.windows, 2);
  EXPECT_EQ(honest.deliveries, 2);
  EXPECT_EQ(honest.outside, 0) << honest.first_outside;
  EXPECT_EQ(honest.longer, 0) << honest.first_longer;
  // A kernel in a delivery (work moved out of the timed request), and a third copy where two
  // outputs were delivered.
  auto moved = check_request_windows(delivered_trace({{"k", 2'250'000, 2'500'000}}), judge_ms, two_copies);
  EXPECT_EQ(moved.outside, 1);
  EXPECT_EQ(moved.first_outside, "'k' (0.250 ms) ran from 0.050 to 0.300 ms after delivery 0 opened (it closed at 0.400 ms)");
  auto extra = check_request_windows(delivered_trace({device_copy(2'250'000, 2'300'000, 8),
                                                      device_copy(2'300'000, 2'350'000, 8),
                                                      device_copy(2'350'000, 2'400'000, 8)}),
                                     judge_ms, two_copies);
  EXPECT_EQ(extra.outside, 1);
  // Copies after the delivery's idle call: left running into the reference's timing.
  EXPECT_EQ(check_request_windows(delivered_trace({device_copy(3'000'000, 3'100'000)}), judge_ms, two_copies).outside,
            1);
  // A delivery window longer than the judge's clock around it: its calls were moved.
  EXPECT_EQ(check_request_windows(delivered_trace({}), judge_ms, {{0.5, 0.3}, 2, 4096}).longer, 1);
  ExecResult r = result_with(OK);
  apply_request_windows(moved, false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED");
  EXPECT_EQ(r.evidence(0).kind(), GPU_WORK_BETWEEN_REQUESTS);
}

TEST(RequestWindows, ADeliveryCopiesDeviceMemoryAndNoMoreThanItsOutputs) {
  // From host memory (a result worked out on the CPU while the judge waited), to the host,
  // a memset, or a copy the trace does not say the kind of (recorded before copy kinds): none
  // is a delivery's.
  for (CopyKind kind : {COPY_HOST_TO_DEVICE, COPY_DEVICE_TO_HOST, COPY_OTHER, COPY_KIND_UNSPECIFIED}) {
    auto found = check_request_windows(delivered_trace({{"[memcpy]", 2'250'000, 2'300'000, kind, 1024}}), judge_ms,
                                       two_copies);
    EXPECT_EQ(found.outside, 1) << CopyKind_Name(kind);
    if (kind == COPY_HOST_TO_DEVICE) {  // the evidence says which copy it was
      EXPECT_EQ(found.first_outside, "'[memcpy]' (host to device, 1024 bytes, 0.050 ms) ran from 0.050 to 0.100 ms "
                                     "after delivery 0 opened (it closed at 0.400 ms)");
    }
  }
  EXPECT_EQ(check_request_windows(delivered_trace({{"[memset]", 2'250'000, 2'300'000, COPY_KIND_UNSPECIFIED, 1024}}),
                                  judge_ms, two_copies)
                .outside,
            1);
  // Two copies within the count but past the bytes (4 KiB): the second is outside; each
  // delivery has its own budget.
  auto large = check_request_windows(delivered_trace({device_copy(2'250'000, 2'300'000, 4000),
                                                      device_copy(2'300'000, 2'350'000, 97),
                                                      device_copy(6'250'000, 6'300'000, 4096)}),
                                     judge_ms, two_copies);
  EXPECT_EQ(large.outside, 1);
  EXPECT_EQ(large.first_outside,
            "'[memcpy]' (device to device, 97 bytes, 0.050 ms) ran from 0.100 to 0.150 ms after delivery 0 opened (it "
            "closed at 0.400 ms)");
}

// A batch's outputs in two deliveries (the judge's buffers hold one call's): the second opens
// right after the first's idle call, and each copies within its own budget; a third the judge
// never asked for (the candidate's own phase calls) may copy nothing.
TEST(RequestWindows, LetABatchsOutputsArriveInSeveralDeliveries) {
  checked_trace t = delivered_trace({{"k", 1'100'000, 1'900'000}, device_copy(2'250'000, 2'300'000),
                                     device_copy(2'700'000, 2'750'000), device_copy(3'100'000, 3'150'000)});
  t.phase_calls = phase_calls_named({"checks", "batch", "idle", "deliver", "idle", "deliver", "idle", "deliver", "idle",
                                     "timed:0", "checks", "untraced"});
  t.phase_at_ns = {500'000, 1'000'000, 2'000'000, 2'200'000, 2'600'000, 2'650'000, 2'900'000, 3'000'000, 3'300'000,
                   9'000'000, 9'500'000, 9'600'000};
  const std::vector<double> one_batch = {1.2};
  auto asked = check_request_windows(t, one_batch, {{0.5, 0.5, 0.5}, 1, 2048});
  EXPECT_EQ(asked.windows, 1);
  EXPECT_EQ(asked.deliveries, 3);
  EXPECT_EQ(asked.outside, 0) << asked.first_outside;
  EXPECT_EQ(asked.longer, 0) << asked.first_longer;
  EXPECT_EQ(asked.unasked_deliveries, 0);
  auto forged = check_request_windows(t, one_batch, {{0.5, 0.5}, 1, 2048});
  EXPECT_EQ(forged.outside, 1);
  EXPECT_EQ(forged.first_outside,
            "'[memcpy]' (device to device, 2048 bytes, 0.050 ms) ran from 0.100 to 0.150 ms after delivery 2 opened (it "
            "closed at 0.300 ms)");
  EXPECT_EQ(forged.unasked_deliveries, 1);
  // Even without a copy in it, a delivery the judge never asked for is a phase call of the
  // candidate's own.
  t.kernels.pop_back();
  auto empty = check_request_windows(t, one_batch, {{0.5, 0.5}, 1, 2048});
  EXPECT_EQ(empty.outside, 0);
  ExecResult r = result_with(OK);
  apply_request_windows(empty, false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED");
  ASSERT_EQ(r.evidence_size(), 1);
  EXPECT_EQ(r.evidence(0).kind(), PHASE_SEQUENCE);
  EXPECT_EQ(r.evidence(0).detail(), "3 delivery windows in the trace, 2 asked for by the judge");
  ExecResult asked_result = result_with(OK);
  apply_request_windows(asked, false, &asked_result);
  EXPECT_EQ(Verdict_Name(asked_result.verdict()), "OK");
}

TEST(RequestWindows, AnUnclosedWindowAndNoWindowsAtAll) {
  checked_trace cut;  // killed inside its first batch
  cut.phase_calls = phase_calls_named({"checks", "batch"});
  cut.phase_at_ns = {500'000, 1'000'000};
  KernelActivity k;
  k.set_start_ns(1'500'000);
  k.set_end_ns(1'600'000);
  cut.kernels.push_back(k);
  auto found = check_request_windows(cut, {});
  EXPECT_EQ(found.windows, 1);
  EXPECT_EQ(found.outside, 0);
  EXPECT_EQ(check_request_windows(checked_trace{}, {}).windows, 0);
}

TEST(TraceCheck, ReadsKeysAsHex) {
  EXPECT_EQ(trace_key_from_hex("000102030405060708090a0b0c0d0e0f"), key);
  EXPECT_EQ(trace_key_from_hex("00"), "");
  EXPECT_EQ(trace_key_from_hex("zz0102030405060708090a0b0c0d0e0f"), "");
}

// Two correctness trials (an eval-mode call each launches 'step' on a grid of 4 blocks for 1 us,
// and the runner's own copy, not the candidate's), then two timed batches of 3 calls: [10, 11]
// and [20, 21] ms. `first` and `second` are each batch's launches of the candidate's kernel, by
// grid; `second_ns`, the GPU time of each of the second's (1 us where not given).
KernelActivity kernel_at(const std::string& name, std::vector<int> grid, uint64_t at, bool generated, TracePhase phase,
                         uint64_t ns = 1000) {
  KernelActivity k;
  k.set_name(name);
  k.set_start_ns(at);
  k.set_end_ns(at + ns);
  for (int g : grid)
    k.add_grid(g);
  for (int b : {128, 1, 1})
    k.add_block(b);
  k.set_generated(generated);
  k.mutable_phase()->set_kind(phase);
  return k;
}

checked_trace batches_of_three(const std::vector<std::vector<int>>& first, const std::vector<std::vector<int>>& second,
                               const std::vector<uint64_t>& second_ns = {}) {
  checked_trace t;
  t.phase_calls = phase_calls_named({"train", "checks", "eval", "checks", "train", "checks", "eval", "checks", "batch",
                                     "idle", "batch", "idle", "untraced"});
  t.phase_at_ns = {1'000'000, 2'000'000, 3'000'000, 4'000'000, 5'000'000, 6'000'000, 7'000'000, 8'000'000,
                   10'000'000, 11'000'000, 20'000'000, 21'000'000, 30'000'000};
  for (uint64_t at : {3'100'000, 7'100'000}) {
    t.kernels.push_back(kernel_at("step", {4, 1, 1}, at, true, TRACE_EVAL));
    // The runner's copy of the call's outputs into the judge's buffers (a batch keeps them for
    // its deliveries): a plain copy, no kernel.
    t.kernels.push_back(kernel_at("[memcpy]", {}, at + 5000, false, TRACE_EVAL));
  }
  t.kernels.push_back(kernel_at("step", {4, 1, 1}, 1'100'000, true, TRACE_TRAIN));  // train mode's, not the batches' measure
  uint64_t at = 10'100'000;
  for (const auto& grid : first)
    t.kernels.push_back(kernel_at("step", grid, at += 10'000, false, TRACE_PHASE_UNSPECIFIED));  // not attributed in a batch
  at = 20'100'000;
  for (size_t i = 0; i < second.size(); ++i)
    t.kernels.push_back(kernel_at("step", second[i], at += 10'000, false, TRACE_PHASE_UNSPECIFIED,
                                  i < second_ns.size() ? second_ns[i] : 1000));
  t.kernels.push_back(kernel_at("copy", {8, 1, 1}, 20'900'000, false, TRACE_PHASE_UNSPECIFIED));
  return t;
}

// batches_of_three's, every call launching its own 'step' and doing its work through PyTorch's
// 'elementwise' (10 us a call alone; in the batches, kernels of these GPU times).
checked_trace with_pytorch_work(const std::vector<uint64_t>& first_ns, const std::vector<uint64_t>& second_ns) {
  const std::vector<int> one = {4, 1, 1};
  checked_trace t = batches_of_three({one, one, one}, {one, one, one});
  for (uint64_t at : {3'200'000, 7'200'000})
    t.kernels.push_back(kernel_at("elementwise", {16, 1, 1}, at, false, TRACE_EVAL, 10'000));
  for (size_t i = 0; i < first_ns.size(); ++i)
    t.kernels.push_back(kernel_at("elementwise", {16, 1, 1}, 10'500'000 + 20'000 * i, false, TRACE_PHASE_UNSPECIFIED,
                                  first_ns[i]));
  for (size_t i = 0; i < second_ns.size(); ++i)
    t.kernels.push_back(kernel_at("elementwise", {16, 1, 1}, 20'500'000 + 20'000 * i, false, TRACE_PHASE_UNSPECIFIED,
                                  second_ns[i]));
  std::sort(t.kernels.begin(), t.kernels.end(),
            [](const KernelActivity& a, const KernelActivity& b) { return a.start_ns() < b.start_ns(); });
  return t;
}

TEST(BatchLaunches, TakeABatchThatLaunchesWhatItsCallsDoAlone) {
  const std::vector<int> one = {4, 1, 1};
  auto found = check_batch_launches(batches_of_three({one, one, one}, {one, one, one}), 3);
  EXPECT_EQ(found.batches, 2);
  EXPECT_EQ(found.unlike, 0) << found.first_unlike;
  EXPECT_EQ(found.least_gpu_share, 1.0);
  // Every kernel, copies left out: an eval-mode call's 'step' (1 us), a batch's three 'step' (3
  // us) and, in the second, a 'copy' kernel (4 us): the first batch's.
  EXPECT_EQ(found.least_gpu_share_all, 1.0);
  ExecResult r = result_with(OK);
  apply_batch_launches(found, false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "OK");
  EXPECT_EQ(r.evidence_size(), 0);
  EXPECT_EQ(r.batch_gpu_share(), 1.0);
  EXPECT_EQ(r.batch_gpu_share_all(), 1.0);
  // One call in four launching one kernel less (3 of 4 at the floor) is within it.
  EXPECT_EQ(check_batch_launches(batches_of_three({one, one, one}, {one, one, one}), 4).unlike, 0);
  // Nothing to compare: no eval-mode launch of its own, or no calls a batch.
  EXPECT_EQ(check_batch_launches(batches_of_three({}, {}), 0).batches, 0);
}

TEST(BatchLaunches, FindABatchWorkedOutInItsFirstCall) {
  // The second batch: one launch over the 3 sets (hostile batches_ahead), or two of three calls.
  auto ahead = check_batch_launches(batches_of_three({{4, 1, 1}, {4, 1, 1}, {4, 1, 1}}, {{4, 3, 1}}), 3);
  EXPECT_EQ(ahead.batches, 2);
  EXPECT_EQ(ahead.unlike, 1);
  EXPECT_EQ(ahead.first_unlike, "batch 1: 1 launches of 'step' grid 4x3x1 block 128x1x1, a shape no eval-mode call launched");
  auto fewer = check_batch_launches(batches_of_three({{4, 1, 1}, {4, 1, 1}}, {{4, 1, 1}}), 3);
  EXPECT_EQ(fewer.unlike, 2);
  EXPECT_EQ(fewer.first_unlike, "batch 0: 2 launches of 'step' grid 4x1x1 block 128x1x1, where 3 eval-mode calls launch 3");
  ExecResult r = result_with(OK);
  apply_batch_launches(ahead, false, &r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED");
  ASSERT_EQ(r.evidence_size(), 1);
  EXPECT_EQ(r.evidence(0).kind(), BATCH_UNLIKE_ITS_CALLS);
  EXPECT_EQ(r.evidence(0).detail(), "1 of 2 timed batches ran its kernels other than its calls did alone; " + ahead.first_unlike);
  // Every call's launch kept, on the grid the calls alone use, but the first does all three
  // sets' work and the others return at once: 1.2 + 0.1 + 0.1 us against 3 x 1 us.
  const std::vector<int> one = {4, 1, 1};
  auto padded = check_batch_launches(batches_of_three({one, one, one}, {one, one, one}, {1200, 100, 100}), 3);
  EXPECT_EQ(padded.unlike, 1);
  EXPECT_DOUBLE_EQ(padded.least_gpu_share, 1400.0 / 3000.0);
  EXPECT_EQ(padded.first_unlike, "batch 1: its kernels took 0.001 ms of GPU time, where 3 calls take 0.003 ms alone");
  // Faster on the GPU than alone by less than half: within the floor (1.5 + 0 + 0 of 3 us, at it).
  EXPECT_EQ(check_batch_launches(batches_of_three({one, one, one}, {one, one, one}, {600, 600, 600}), 3).unlike, 0);
  EXPECT_EQ(check_batch_launches(batches_of_three({one, one, one}, {one, one, one}, {1500, 0, 0}), 3).unlike, 0);
  ExecResult clock = result_with(HACKED);  // another rule's HACKED first: its message, both rules' evidence
  clock.set_message("the judge's clock");
  apply_batch_launches(ahead, false, &clock);
  EXPECT_EQ(clock.message(), "the judge's clock");
  ASSERT_EQ(clock.evidence_size(), 1);
  EXPECT_EQ(clock.evidence(0).kind(), BATCH_UNLIKE_ITS_CALLS);
  ExecResult wrong = result_with(INCORRECT);  // no verdict on a batch of wrong calls
  apply_batch_launches(ahead, false, &wrong);
  EXPECT_EQ(wrong.evidence_size(), 0);
  ExecResult ablation = result_with(OK);  // the check off: the evidence stays, the verdict too
  apply_batch_launches(fewer, true, &ablation);
  EXPECT_EQ(Verdict_Name(ablation.verdict()), "OK");
  EXPECT_EQ(ablation.evidence_size(), 1);
}

TEST(BatchLaunches, FindABatchWorkedOutAheadThroughPyTorchsKernels) {
  // Honest: each call's 10 us of PyTorch's work in the batches too. One call alone: 'step' 1 us,
  // 'elementwise' 10 us (the runner's copy is no kernel); the first batch 3 + 30 of 33 us.
  auto honest = check_batch_launches(with_pytorch_work({10'000, 10'000, 10'000}, {10'000, 10'000, 10'000}), 3);
  EXPECT_EQ(honest.unlike, 0) << honest.first_unlike;
  EXPECT_EQ(honest.least_gpu_share_all, 1.0);
  EXPECT_EQ(honest.least_gpu_share, 1.0);
  // The second batch's first call works out all three sets in one PyTorch launch (hostile
  // batches_ahead_torch): its own launches are every call's, its process's GPU time 3 + 10 + 1 us.
  auto ahead = check_batch_launches(with_pytorch_work({10'000, 10'000, 10'000}, {10'000}), 3);
  EXPECT_EQ(ahead.unlike, 1);
  EXPECT_DOUBLE_EQ(ahead.least_gpu_share_all, 14.0 / 33.0);
  EXPECT_EQ(ahead.first_unlike,
            "batch 1: its process's kernels (its own and PyTorch's) took 0.014 ms of GPU time, where 3 calls take "
            "0.033 ms alone");
  // A batch at half its calls' GPU time or more is within the floor (3 + 15 = 18 of 33 us).
  EXPECT_EQ(check_batch_launches(with_pytorch_work({5'000, 5'000, 5'000}, {10'000, 10'000, 10'000}), 3).unlike, 0);
}

TEST(BatchLaunches, MeasureOneCallByTheMedianOfTheEvalModeCalls) {
  // Three eval-mode calls, the first also preparing its weights once ('prep', 50 us of its own);
  // a batch of two calls that launch 'step' (1 us) each.
  checked_trace t;
  t.phase_calls = phase_calls_named({"eval", "checks", "eval", "checks", "eval", "checks", "batch", "idle", "untraced"});
  t.phase_at_ns = {1'000'000, 2'000'000, 3'000'000, 4'000'000, 5'000'000, 6'000'000, 10'000'000, 11'000'000, 30'000'000};
  t.kernels.push_back(kernel_at("prep", {64, 1, 1}, 1'050'000, true, TRACE_EVAL, 50'000));
  for (uint64_t at : {1'200'000, 3'200'000, 5'200'000})
    t.kernels.push_back(kernel_at("step", {4, 1, 1}, at, true, TRACE_EVAL));
  t.kernels.push_back(kernel_at("step", {4, 1, 1}, 10'100'000, false, TRACE_PHASE_UNSPECIFIED));
  t.kernels.push_back(kernel_at("step", {4, 1, 1}, 10'200'000, false, TRACE_PHASE_UNSPECIFIED));
  auto found = check_batch_launches(t, 2);
  EXPECT_EQ(found.batches, 1);
  EXPECT_EQ(found.unlike, 0) << found.first_unlike;
  EXPECT_EQ(found.least_gpu_share, 1.0);  // 2 us against twice the median call's 1 us (not the mean's 17.7)
  EXPECT_EQ(found.least_gpu_share_all, 1.0);
  // 'prep' in two of the three calls is every call's: a batch without it is unlike them.
  t.kernels.push_back(kernel_at("prep", {64, 1, 1}, 3'050'000, true, TRACE_EVAL, 50'000));
  std::sort(t.kernels.begin(), t.kernels.end(),
            [](const KernelActivity& a, const KernelActivity& b) { return a.start_ns() < b.start_ns(); });
  EXPECT_EQ(check_batch_launches(t, 2).first_unlike,
            "batch 0: 0 launches of 'prep' grid 64x1x1 block 128x1x1, where 2 eval-mode calls launch 2");
}

TEST(BatchLaunches, MeasureOneCallAloneByTheTracedCallsWhereLess) {
  // Two eval-mode calls whose 'step' ran beside the judge's reference (2.5 us each), a batch of
  // three at 1 us a call, then three traced calls alone.
  const std::vector<int> one = {4, 1, 1};
  checked_trace t = batches_of_three({one, one, one}, {one, one, one});
  t.phase_calls = phase_calls_named({"train", "checks", "eval", "checks", "train", "checks", "eval", "checks", "batch",
                                     "idle", "batch", "idle", "timed:0", "checks", "timed:1", "checks", "timed:2",
                                     "checks", "untraced"});
  t.phase_at_ns = {1'000'000,  2'000'000,  3'000'000,  4'000'000,  5'000'000,  6'000'000,  7'000'000,
                   8'000'000,  10'000'000, 11'000'000, 20'000'000, 21'000'000, 22'000'000, 23'000'000,
                   24'000'000, 25'000'000, 26'000'000, 27'000'000, 30'000'000};
  for (auto& k : t.kernels)
    if (k.phase().kind() == TRACE_EVAL && k.name() == "step")
      k.set_end_ns(k.start_ns() + 2500);
  const auto alone = [&](uint64_t step_ns) {
    checked_trace traced = t;
    for (uint64_t at : {22'100'000, 24'100'000, 26'100'000}) {
      KernelActivity k = kernel_at("step", one, at, false, TRACE_TIMED, step_ns);
      k.mutable_phase()->set_rep(static_cast<int>((at - 22'100'000) / 2'000'000));
      traced.kernels.push_back(k);
    }
    return traced;
  };
  // Against the eval-mode calls alone, an honest batch is 3 of 7.5 us: below the floor.
  EXPECT_EQ(check_batch_launches(t, 3).unlike, 2);
  EXPECT_DOUBLE_EQ(check_batch_launches(t, 3).least_gpu_share, 3.0 / 7.5);
  // Against the traced calls', at 1 us a call, it is its calls' time.
  auto honest = check_batch_launches(alone(1000), 3);
  EXPECT_EQ(honest.unlike, 0) << honest.first_unlike;
  EXPECT_EQ(honest.least_gpu_share, 1.0);
  EXPECT_EQ(honest.least_gpu_share_all, 1.0);
  // Traced calls slower than the eval-mode calls leave the eval-mode calls' measure; traced calls
  // with none of its kernels leave it too (a figure of 0 is no call's measure).
  EXPECT_DOUBLE_EQ(check_batch_launches(alone(4000), 3).least_gpu_share, 3.0 / 7.5);
  EXPECT_DOUBLE_EQ(check_batch_launches(alone(0), 3).least_gpu_share, 3.0 / 7.5);
  // A batch worked out in its first call is as unlike its calls alone as before.
  checked_trace ahead = alone(1000);
  for (auto& k : ahead.kernels)
    if (k.start_ns() > 20'000'000 && k.start_ns() < 21'000'000 && k.name() == "step")
      k.set_end_ns(k.start_ns() + (k.start_ns() < 20'115'000 ? 1200 : 100));
  auto found = check_batch_launches(ahead, 3);
  EXPECT_EQ(found.unlike, 1);
  EXPECT_EQ(found.first_unlike, "batch 1: its kernels took 0.001 ms of GPU time, where 3 calls take 0.003 ms alone");
}

}  // namespace
}  // namespace kgym::test
