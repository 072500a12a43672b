#include "gpu/executor/trace_ruling.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <vector>

#include "gpu/executor/scrub.hpp"
#include "gpu/profiler/batch_launches.hpp"
#include "gpu/profiler/request_windows.hpp"
#include "gpu/profiler/trace_check.hpp"
#include "gpu/profiler/trace_profile.hpp"
#include "gpu/profiler/untrusted_file.hpp"
#include "messages/evidence.hpp"

namespace kgym {

CandidateTrace read_candidate_trace(const std::string& path, const std::string& key_hex, const ExecRequest& request) {
  CandidateTrace trace;
  trace.set_lines(read_untrusted_file(path, max_trace_bytes).value_or(""));
  trace.set_key_hex(key_hex);
  trace.set_correctness_trials(request.options().correctness_trials());
  trace.set_traced_reps(request.device() == CUDA ? request.options().traced_reps() : 0);
  trace.set_device(request.device());
  trace.set_no_hacking_check(request.options().no_hacking_check());
  trace.set_candidate_source(request.candidate().source());
  return trace;
}

namespace {

void apply_trace(const CandidateTrace& t, ExecResult* result) {
  auto trace = check_trace(split_trace_lines(t.lines()), trace_key_from_hex(t.key_hex()));
  auto unmarked = unmark_generated_not_in_source(trace.kernels, t.candidate_source());
  if (!unmarked.empty())
    add_evidence(result, GENERATED_KERNEL_NOT_IN_SOURCE,
                 "the trace calls kernels generated that the candidate's source does not name: " +
                     first_and_more(unmarked),
                 "cupti");
  const std::vector<double> batches(result->timed_batch_ms().begin(), result->timed_batch_ms().end());
  apply_trace_integrity(trace, expected_phase_calls(t.correctness_trials(), static_cast<int>(batches.size()), t.traced_reps()),
                        t.no_hacking_check(), result);
  const delivery_limits deliveries{{result->delivery_ms().begin(), result->delivery_ms().end()},
                                   result->delivery_copies(), result->delivery_bytes()};
  apply_request_windows(check_request_windows(trace, batches, deliveries),
                        t.no_hacking_check(), result);
  if (t.device() == CUDA) {
    apply_batch_launches(check_batch_launches(trace, result->timed_batch_calls()), t.no_hacking_check(), result);
    apply_profile_verdict(profile_of(trace), t.no_hacking_check(), result);
  }
}

}  // namespace

ExecResult rule_on_trace(ExecResult result, const CandidateTrace& trace) {
  if (!trace.key_hex().empty()) {
    const auto started = std::chrono::steady_clock::now();
    apply_trace(trace, &result);
    (*result.mutable_harness_seconds())["trace_check"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  scrub_result(&result, process_secrets());
  spdlog::info("request {} task {} candidate {}: {} in {:.2f} s{}", result.request_id(), result.task_id(),
               result.candidate_id(), Verdict_Name(result.verdict()), result.wall_s(),
               result.verdict() == OK ? "" : " (" + result.message().substr(0, 200) + ")");
  return result;
}

}  // namespace kgym
