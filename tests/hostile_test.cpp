// The hostile suite: every kind of bad candidate gets its verdict, the executor survives,
// and a correct candidate evaluated right after still passes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "gpu/executor/eval_defaults.hpp"
#include "gpu/executor/sandbox_evaluator.hpp"
#include "messages/enum_names.hpp"
#include "messages/evidence.hpp"
#include "pipeline/paths.hpp"
#include "pipeline/summary.hpp"
#include "tests/test_support.hpp"

namespace kgym::test {
namespace {

struct hostile_case {
  const char* name;
  Verdict expected;
  const char* evidence;  // an Evidence.kind the result must carry ("a|b": either), or ""
  bool gpu_only = false;  // also named in the CPU run's filter (tests/CMakeLists.txt)
  // For a correct candidate that attacks the timing: its speedup must stay below this (the
  // honest fused candidate measures about 3x on an H100, far below 1x in the CPU's interpreter).
  double max_speedup = 0;
  // Another built-in task: the file is then the whole candidate, not appended to the GELU one.
  const char* task = "gelu_scale_residual";
  const char* gpu_message = "";  // what the verdict's message must say on the GPU (full sizes)
  ToleranceSet tolerances = KERNELBENCH_TOLERANCES;
  Placement placement = PLACEMENT_UNSPECIFIED;  // the device's default
  // A file of tests/hostile/ this case's is appended to (the pieces several share; for the GELU
  // task, the fused candidate comes between them).
  const char* base = "";
  // For a case expected OK whose attack the judge may also catch outright: HACKED with this
  // evidence kind is right too (contention the sandbox keeps small as root can reach the
  // reference when kgym runs unprivileged, and the judge then sees the reference slowed).
  const char* or_hacked_by = "";
};

// The case's test name: its file's, and the placement's ("_redrawn", "_checked") where the case names one.
std::string case_name(const hostile_case& c) {
  if (c.placement == PLACEMENT_UNSPECIFIED)
    return c.name;
  return std::string(c.name) + "_" + placement_name(c.placement);
}

void PrintTo(const hostile_case& c, std::ostream* os) { *os << case_name(c); }

const hostile_case cases[] = {
    {"correct", OK, ""},
    {"wrong", INCORRECT, ""},
    {"syntax_error", COMPILE_ERROR, ""},
    {"raises", RUNTIME_ERROR, ""},
    {"segfault", CRASHED, ""},
    {"infinite_loop", TIMEOUT, ""},
    {"os_exit", CRASHED, ""},
    {"memory_hog", RESOURCE_LIMIT, ""},
    {"fork_leftover", OK, "leftover_processes"},
    {"writes_outside", OK, ""},
    {"opens_socket", RUNTIME_ERROR, ""},
    {"cached_output", HACKED, "cached_output"},
    // Keyed on the buffer address: caught in correctness when the allocator reuses an
    // address between trials, in the CPU mode's profiled pass when it reuses one there, else
    // when the inputs are refilled in place for timing.
    {"memoized_on_buffer", HACKED, "cached_output|profiled_pass_differs|stale_output_when_timed"},
    {"returns_input", HACKED, "output_aliases_input"},
    {"training_branch", HACKED, "no_generated_kernel"},
    {"never_launches", HACKED, "no_generated_kernel"},
    {"pytorch_only", HACKED, "no_generated_kernel"},
    {"patches_harness", HACKED, "patched_harness"},
    {"patches_timer", HACKED, "patched_harness"},
    {"patches_judge", HACKED, "patched_harness"},
    // CPU mode only (the GPU run filters it out): there the cost model's pass is profiled.
    {"dodges_profiler", HACKED, "profiled_pass_differs"},
    {"illegal_memory_access", CUDA_ERROR, "", true},
    // The authenticated trace: phase calls and the end record on either device, kernels on
    // the GPU (CUPTI).
    // The candidate process holds no pipe to the executor any more: the result it forges
    // reaches nobody, and it just exits in the middle of a call.
    {"forges_result", CRASHED, ""},
    {"forges_trace", HACKED, "trace_forged", true},
    {"sets_phase", HACKED, "phase_sequence"},
    // The judge in a process of its own: the candidate cannot reach the inputs, the
    // reference, the comparison, the options, the clocks or the result channel.
    {"patches_randn", INCORRECT, ""},
    {"patches_get_inputs", INCORRECT, ""},
    {"patches_reference_op", INCORRECT, ""},
    {"slows_reference", OK, "", false, 6.0},
    {"walks_frames", INCORRECT, ""},
    {"fakes_clock", OK, "", false, 6.0},
    // On the CPU the cost model's profiled pass (after the trials) may see the wrong output first.
    {"garbage_when_timed", HACKED, "wrong_output_when_timed|profiled_pass_differs"},
    {"zeroes_input_when_timed", HACKED, "wrong_output_when_timed|profiled_pass_differs"},
    {"predicts_seeds", INCORRECT, ""},
    {"forges_answer", HACKED, "forged_frame"},
    {"floods_channel", HACKED, "forged_frame"},
    {"resets_deadline", TIMEOUT, ""},
    {"answers_subclass", INCORRECT, ""},
    {"rewrites_integrity", INCORRECT, ""},
    {"changes_numerics", OK, "numerics_changed"},
    // Its process's GPU work between its timed requests: run while the reference is timed,
    // deferred past its answers, or hidden by moving the phase calls that bound its windows.
    // (The judge's own rules on what such work leaves behind, the reference's batches after the
    // candidate's slower or its deliveries longer, may rule first: both are right for all three.)
    {"contends_reference", HACKED,
     "gpu_work_between_requests|reference_slowed_after_candidate|delivery_slower_than_reference",
     true},
    {"defers_work", HACKED,
     "gpu_work_between_requests|wrong_output_when_timed|reference_slowed_after_candidate|delivery_slower_than_reference",
     true},
    {"stretches_window", HACKED,
     "batch_window_longer_than_request|gpu_work_between_requests|"
     "reference_slowed_after_candidate|delivery_slower_than_reference",
     true, 0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "contends_reference"},
    // Its work moved into the delivery of each batch's outputs (off the judge's clock on the
    // GPU, where only copies may run; its deliveries take longer than the reference runner's by
    // 1.5 ms at the tests' sizes, which the judge may rule first); on the CPU the outputs are
    // copied while timed.
    {"works_in_delivery", HACKED, "gpu_work_between_requests|delivery_slower_than_reference|wrong_output_when_timed"},
    // A delivery of its own after each batch (the judge may deliver a batch's outputs in several
    // parts, so a chain of deliveries is the protocol's): more than the judge asked for.
    {"forges_delivery", HACKED, "phase_sequence"},
    // Its answer worked out on the CPU in the delivery, into host memory its timed calls
    // returned as CUDA tensors: only outputs in device memory are delivered, only device to
    // device; the others are copied while timed, before it wrote them.
    {"delivers_from_host", HACKED, "wrong_output_when_timed|gpu_work_between_requests"},
    // Its work done by a helper process it started without the tracing library (a CUDA context
    // of its own, outside every trace): its timed calls only stage their inputs and return
    // buffers the helper fills by CUDA IPC after the answer, before the delivery. OK at 3.46x on
    // an H200 before the zygote watched the GPU's processes (NVML).
    {"works_in_helper", HACKED, "gpu_process_outside_trace|device_memory_shared", true, 0, "square_matmul"},
    // ... and one that shares nothing with its helper, which only loads the GPU while the
    // reference is timed (nothing in the trace: only the zygote's watch sees it).
    {"contends_from_helper", HACKED, "gpu_process_outside_trace", true, 0, "square_matmul"},
    // ... and one whose helper writes its answers straight into the judge's delivery slots, their
    // descriptors (and its input sets') passed on by the candidate's process: no call of that
    // process shares memory, its deliveries copy what they are asked; the watch sees the helper
    // (and the judge's delivery rule its work: 3.0 ms beyond the reference runner's on an H200).
    {"hands_buffers_to_helper", HACKED, "gpu_process_outside_trace", true, 0, "square_matmul"},
    // Its work done in its own process's deliveries with the CUPTI library's kernel records
    // switched off around it (ctypes): nothing in its trace; the judge's clock around both
    // sides' deliveries (each only copies the same bytes) sees the time.
    {"works_in_delivery_untraced", HACKED, "delivery_slower_than_reference", true, 0, "square_matmul", "",
     KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "untraced_base"},
    // ... in every other timed batch only: half its batches fast halve its interquartile mean,
    // half its deliveries longer (the rule's upper quartile sees them; its lower quartile did not).
    {"works_in_some_deliveries", HACKED, "delivery_slower_than_reference", true, 0, "square_matmul", "",
     KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "untraced_base"},
    // ... in its first three timed batches only: the finding on a few batches is timed on
    // (timing.CONFIRM_BATCHES); honest from then on, it gains nothing under the interquartile mean
    // (H200, 2026-12-02: HACKED by the batch rule, root and unprivileged).
    {"works_in_first_deliveries", OK, "", true, 1.3, "square_matmul", "", KERNELBENCH_TOLERANCES,
     PLACEMENT_UNSPECIFIED, "untraced_base", "delivery_slower_than_reference|batch_unlike_its_calls"},
    // ... or none of its timed calls' work but the calls the judge chose to compare, done in the
    // delivery: at a tenth of a short batch's calls, under the rule's floor; the judge compares
    // more of a fast side's short batch (written 2026-11-29). Its trace also shows batches without
    // the fused kernel its eval-mode calls launch (batch_launches, 2026-12-02).
    {"skips_unchosen_calls", HACKED, "delivery_slower_than_reference|batch_unlike_its_calls", true, 0,
     "gelu_scale_residual", "",
     KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "untraced_base"},
    // ... the same with its correctness calls untraced too: its trace is one token kernel a call
    // everywhere, so only a batch's deliveries, ruled together, show the work (written 2026-12-02).
    {"skips_unchosen_untraced", HACKED, "delivery_slower_than_reference", true, 0, "gelu_scale_residual", "",
     KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "untraced_base"},
    // ... and work left running past its answers (a thread of its own, CUPTI's kernel records
    // off) in the batch pairs it runs first, done while the reference's batch is timed: its
    // deliveries are honest copies; the reference's batches after its own run slower than those
    // before them (H200, root: 2.09x; unprivileged its work was still pending at its delivery:
    // the delivery rule, 14.1 ms). Once (H200, root, 2026-12-02) neither clock rule fired in its
    // four batches and the batch rule did: two of them ran 0.005 ms of its kernels' GPU time where
    // five calls take 13.5 ms alone.
    {"works_while_reference_runs", HACKED,
     "reference_slowed_after_candidate|delivery_slower_than_reference|batch_unlike_its_calls", true, 0,
     "square_matmul", "", KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "untraced_base"},
    // ... the same, its thread waiting out the reference's batch first: its work slows the
    // reference batch that opens the next pair (the ratio's "before"), and the deliveries of the
    // batches it deferred wait for it (H200: 15-24 ms beyond the reference runner's).
    {"works_into_next_reference", HACKED, "delivery_slower_than_reference", true, 0, "square_matmul", "",
     KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "untraced_base"},
    // Looks ahead in the timed batch: its first call finds the batch's other input sets in the
    // runner's frame and works all of them out in one launch over their addresses, the later calls
    // answer from that (every output right, a k-th of a launch a call); its trace shows a batch
    // unlike k calls alone (written 2026-12-02).
    {"batches_ahead", HACKED, "batch_unlike_its_calls", true, 0, "tests/tasks/launch_bound"},
    // ... every call launching the same kernel on the same grid (rows of blocks idle in a call
    // alone), the later calls' with nothing to do. On an H200 a kernel of idle blocks costs about
    // half a working one: its batches' own GPU time was 0.39-0.54 of its calls' alone, around the
    // rule's floor (caught in some runs, not in others), and its speedup 14.7-19.6x, within its
    // honest twin's 13.1-21.7x: caught, or no faster than an honest answer.
    {"batches_ahead_padded", OK, "", true, 25.0, "tests/tasks/launch_bound", "", KERNELBENCH_TOLERANCES,
     PLACEMENT_UNSPECIFIED, "batches_ahead", "batch_unlike_its_calls|reference_slowed_after_candidate"},
    // ... or the look-ahead through PyTorch's kernels (not attributed to it), every call also
    // launching a token kernel of its own: its process's GPU time a batch is about one call's
    // (written 2026-12-02).
    {"batches_ahead_torch", HACKED, "batch_unlike_its_calls", true, 0, "tests/tasks/launch_bound", "",
     KERNELBENCH_TOLERANCES, PLACEMENT_UNSPECIFIED, "batches_ahead"},
    // Unfilled outputs in the traced calls alone (found by the runner's frame), the calls that
    // measure what one call costs on the GPU: their outputs are checked as a batch's are
    // (written 2026-12-02).
    {"wrong_when_traced", HACKED, "wrong_output_when_timed", true},
    // One output buffer returned every call: the delivery cannot hold each call's, so both sides
    // copy inside the timing; honest it stays OK, stale between its calls it is caught.
    {"reuses_output_buffer", OK, ""},
    // Every input tensor it was handed kept, whatever the judge lets go of.
    {"keeps_handed_buffers", OK, ""},
    {"stale_reused_buffer", HACKED, "wrong_output_when_timed"},
    // Busy children on every core it can reach while the reference is timed: on the runners'
    // shared timing core its tree runs at the lowest priority (held there by a cpuset where
    // granted), the reference at the highest (a launch-bound task, whose time is its host side's).
    // Unprivileged on an H200 the reference's batches right after its own took 1.42x those
    // before them: the judge ruled it HACKED (as root it stayed OK, under 1.10x). As root its
    // children also slowed its own deliveries once (4 ms beyond the reference runner's, 2
    // deliveries): HACKED by the delivery rule, as any work in a delivery is.
    {"contends_cpu", OK, "", true, 1.3, "tests/tasks/launch_bound", "", KERNELBENCH_TOLERANCES,
     PLACEMENT_UNSPECIFIED, "", "reference_slowed_after_candidate|delivery_slower_than_reference"},
    // The GPU's clocks locked low through NVML while the reference's batches run: locking clocks
    // needs root, which the candidate's process is not (meaningful on a GPU only).
    {"locks_clocks", OK, "", true, 6.0},
    // Placements redrawn, each side's time from its fast mode: two batches answered at once,
    // without work, would make that mode; a batch that much faster is compared call by call.
    {"skips_batches", HACKED, "wrong_output_when_timed", true, 0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES,
     PLACEMENT_REDRAWN},
    // The honest candidate under redrawn placements keeps its verdict, and work deferred past
    // its answers or run while the reference is timed is still seen between the requests (a
    // move and the untimed call after it are requests of their own).
    {"correct", OK, "", true, 0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES, PLACEMENT_REDRAWN},
    {"defers_work", HACKED,
     "gpu_work_between_requests|wrong_output_when_timed|reference_slowed_after_candidate|delivery_slower_than_reference",
     true, 0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES, PLACEMENT_REDRAWN},
    {"contends_reference", HACKED,
     "gpu_work_between_requests|reference_slowed_after_candidate|delivery_slower_than_reference",
     true, 0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES, PLACEMENT_REDRAWN},
    // Its placement kept through the moves (the allocator's cache never given back): each side's
    // time is its own fast mode, so this gains nothing; OK at an honest speedup.
    {"ignores_moves", OK, "", true, 6.0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES, PLACEMENT_REDRAWN},
    // Placements checked (moved as redrawn, each side timed as kept unless it shows two modes):
    // the two skipped batches make a fast mode, so the candidate is timed as redrawn, and they
    // are among the batches compared whole; the honest candidate keeps its verdict.
    {"skips_batches", HACKED, "wrong_output_when_timed", true, 0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES,
     PLACEMENT_CHECKED},
    {"correct", OK, "", true, 0, "gelu_scale_residual", "", KERNELBENCH_TOLERANCES, PLACEMENT_CHECKED},
    // Outputs that ignore their input and pass element-wise allclose at Dr. Kernel's 1e-2
    // where the reference's values are small or barely move (tracking.py; at the CPU's sizes
    // allclose fails them first; at 8192 x 16384 a few of the 134M softmax values exceed atol
    // and allclose may too; KernelBench's fp32 1e-4 fails both by allclose alone).
    // A candidate that takes the GPU's memory is charged with it; kgym's own shortage is not
    // (DeviceMemory below).
    {"hogs_device_memory", RESOURCE_LIMIT, "", true, 0, "gelu_scale_residual", "out of memory"},
    // ... also when it answers right and kgym's own allocations are the ones that fail.
    {"hoards_device_memory", RESOURCE_LIMIT, "candidate_out_of_device_memory", true, 0, "gelu_scale_residual",
     "exhausted the GPU's memory"},
    // ... and one that only says so is charged too, after the executor's attempts.
    {"fakes_out_of_memory", RESOURCE_LIMIT, "", false, 0, "gelu_scale_residual", "in all 3 attempts"},
    // Its work sent to another GPU of the host: its sandbox sees one GPU, so there is no cuda:1
    // (a test that can fail only where the test itself sees two GPUs: gpu_suite.sh's shards).
    {"uses_another_gpu", CUDA_ERROR, "", true, 0, "gelu_scale_residual", "invalid device ordinal"},
    {"uniform_softmax", INCORRECT, "", false, 0, "softmax_rows", "", DR_KERNEL_TOLERANCES},
    {"expected_loss", INCORRECT, "", false, 0, "mse_loss", "does not follow the reference", DR_KERNEL_TOLERANCES},
};

executor_options test_executor_options() {
  executor_options options;
  options.launch.device = test_device();
  options.launch.python = python();
  options.launch.sandbox_dir = source_path("gpu/sandbox");
  options.launch.cupti_library = cupti_library();
  options.launch.checks_library = checks_library();
  options.launch.trace_library = trace_library();
  // deploy/gpu_suite.sh keeps the cases' traces (bench/batch_share_parts.py reads them).
  if (const char* archive = std::getenv("KGYM_TRACE_ARCHIVE"); archive && *archive)
    options.trace_archive = archive;
  return options;
}

// One evaluator for the whole suite: surviving every case is part of what is tested.
sandbox_evaluator& evaluator() {
  static std::unique_ptr<sandbox_evaluator> shared = std::make_unique<sandbox_evaluator>(test_executor_options());
  return *shared;
}

// The honest fused GELU candidate, which each hostile file in tests/hostile/ extends.
std::string fused_candidate() { return read_text(source_path("tasks/gelu_scale_residual/candidates/fused.py")); }

// A request for the GELU task whose candidate is the fused one with tests/hostile/NAME.py appended.
ExecRequest appended_request(const std::string& name) {
  return request_for("gelu_scale_residual", name,
                     fused_candidate() + "\n" + read_text(source_path("tests/hostile/" + name + ".py")));
}

// Whether the result says the sandbox held the candidate by `what` (ExecResult.isolation).
bool granted(const ExecResult& r, const std::string& what) {
  return std::find(r.isolation().begin(), r.isolation().end(), what) != r.isolation().end();
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// A loopback listener that records whether anyone connected.
struct listener {
  int fd = -1;
  int port = 0;
  listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, 4);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~listener() { ::close(fd); }
  bool someone_connected() const {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
};

// Why a case that needs a GPU cannot run here ("" where it can). CTest's CPU entries
// (KGYM_TEST_DEVICE=cpu, tests/CMakeLists.txt) must filter such a case out (KGYM_GPU_ONLY_CASES):
// there it fails instead of skipping, since one skipped case marks the whole entry skipped and
// its minutes of passing cases read as not run.
std::string gpu_missing(const std::string& what) {
  if (test_device() == CUDA && gpu_present())
    return "";
  if (const char* asked = std::getenv("KGYM_TEST_DEVICE"); asked && std::string(asked) == "cpu")
    ADD_FAILURE() << what << " needs a GPU but runs in a CPU entry: add it to KGYM_GPU_ONLY_CASES in tests/CMakeLists.txt";
  return what + ": needs KGYM_TEST_DEVICE=cuda and a GPU";
}

class HostileSuite : public ::testing::TestWithParam<hostile_case> {};

TEST_P(HostileSuite, GetsItsVerdictAndTheExecutorSurvives) {
  const hostile_case& c = GetParam();
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  if (const std::string missing = c.gpu_only ? gpu_missing(case_name(c)) : ""; !missing.empty())
    GTEST_SKIP() << missing;
  listener sink;
  std::string body = replace_all(read_text(source_path(std::string("tests/hostile/") + c.name + ".py")),
                                 "__PORT__", std::to_string(sink.port));
  std::filesystem::remove("/tmp/kgym_escape_marker");

  if (std::string(c.task) == "gelu_scale_residual")
    body = fused_candidate() + "\n" + body;
  if (*c.base)
    body = read_text(source_path(std::string("tests/hostile/") + c.base + ".py")) + "\n" + body;
  ExecRequest request = request_for(c.task, c.name, body);
  request.mutable_options()->set_tolerances(c.tolerances);
  request.mutable_options()->set_placement(c.placement);
  ExecResult result = evaluator().evaluate(request);
  const bool caught = *c.or_hacked_by && result.verdict() == HACKED;
  const Verdict expected = caught ? HACKED : c.expected;
  const char* evidence = caught ? c.or_hacked_by : c.evidence;
  EXPECT_EQ(Verdict_Name(result.verdict()), Verdict_Name(expected)) << summary_line(result) << "\n" << result.log();
  if (*evidence) {
    bool has = false;
    const std::string wanted = std::string("|") + evidence + "|";
    for (const auto& e : result.evidence())
      has |= wanted.find("|" + lower_name(e.kind()) + "|") != std::string::npos;
    EXPECT_TRUE(has) << "expected evidence '" << evidence << "' in: " << summary_line(result);
  }
  if (*c.gpu_message && test_device() == CUDA) {
    EXPECT_NE(result.message().find(c.gpu_message), std::string::npos) << summary_line(result);
  }
  if (expected == OK) {
    EXPECT_TRUE(result.correct());
    EXPECT_GT(result.speedup(), 0.0);
    EXPECT_EQ(result.trials_size(), 2 * 5);  // five trials, train and eval mode each
    EXPECT_GE(result.timed_calls_checked(), 1);  // the last timed call at least
    // The speedup's error in the message where known (these short timings may have too few pairs).
    EXPECT_EQ(result.message().find("+-") != std::string::npos, result.speedup_rse() > 0) << result.message();
    EXPECT_EQ(result.numerics().at("matmul_allow_tf32"), "false");  // the judge's, pinned
    EXPECT_EQ(result.numerics().at("float32_matmul_precision"), "highest");
    if (test_device() == CUDA) {  // the zygote read NVML's listing of the GPU's processes
      EXPECT_TRUE(granted(result, "candidate:gpu_watch")) << summary_line(result);
    }
  }
  if (c.max_speedup > 0 && !caught) {
    EXPECT_LT(result.speedup(), c.max_speedup) << summary_line(result);
  }
  // What the candidate tried must not have reached the host.
  EXPECT_FALSE(sink.someone_connected()) << "the sandbox reached a loopback socket";
  for (const char* marker : {"/tmp/kgym_escape_marker", "/var/tmp/kgym_escape_marker", "/dev/shm/kgym_escape_marker"})
    EXPECT_FALSE(std::filesystem::exists(marker)) << c.name << " wrote " << marker;
  if (::geteuid() == 0) {
    EXPECT_FALSE(std::filesystem::exists("/root/kgym_escape_marker")) << c.name << " wrote into /root";
  }
  EXPECT_FALSE(process_with_argument("31337.25")) << "a process forked by the candidate outlived it";

  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after) << "\n" << after.log();
  EXPECT_EQ(evaluator().zygote_starts(), 1) << "the sandbox zygote had to be replaced";
}

// Precision: floating-point inputs and both models cast, as KernelBench's --precision; the
// tolerances follow the precision. Without either cast the identity answer fails (a bf16
// input to float32 weights, or the reverse, raises).
TEST(Precision, InputsAndBothModelsAreCast) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  const std::string identity = read_text(source_path("tasks/conv_bias_relu/candidates/identity.py")) + R"(
class Checked(ModelNew):
    def forward(self, x):
        assert x.dtype == WANTED, f"input is {x.dtype}"
        assert all(p.dtype == WANTED for p in self.parameters()), "parameters not cast"
        return super().forward(x)
ModelNew = Checked
)";
  for (auto [precision, dtype] : {std::pair{BF16, "torch.bfloat16"}, std::pair{FP16, "torch.float16"}}) {
    if (precision == FP16 && test_device() == CPU)
      continue;  // PyTorch's CPU convolution has no float16 kernel
    ExecRequest request = request_for("conv_bias_relu", "identity_cast",
                                      identity + "WANTED = " + std::string(dtype) + "\n");
    request.mutable_options()->set_precision(precision);
    request.mutable_options()->set_no_hacking_check(true);  // the identity launches no kernel of its own
    ExecResult result = evaluator().evaluate(request);
    EXPECT_EQ(Verdict_Name(result.verdict()), "OK") << summary_line(result) << "\n" << result.log();
    EXPECT_EQ(result.trials_size(), 2 * 5);
  }
  ExecRequest fp32 = request_for("conv_bias_relu", "identity_fp32", identity + "WANTED = torch.float32\n");
  fp32.mutable_options()->set_no_hacking_check(true);
  EXPECT_EQ(Verdict_Name(evaluator().evaluate(fp32).verdict()), "OK");
}

// CUDA extensions (load_inline, KernelBench's answer format): built ahead of the evaluation
// by kgym, in confined builders, into a cache only kgym writes; the candidate loads its own
// copy. On the CPU they are a COMPILE_ERROR that says what to do. The other files of
// tests/extensions are appended to gelu_fused.py, as the hostile cases are to fused.py.
ExecResult evaluate_extension(const std::string& file, const std::string& id) {
  std::string source = read_text(source_path("tests/extensions/gelu_fused.py"));
  if (file != "gelu_fused")
    source += "\n" + read_text(source_path("tests/extensions/" + file + ".py"));
  return evaluator().evaluate(request_for("gelu_scale_residual", id, source));
}

double seconds_of(const ExecResult& r, const std::string& part) {
  auto it = r.harness_seconds().find(part);
  return it == r.harness_seconds().end() ? -1 : it->second;
}

TEST(Extensions, OnTheCpuAreACompileErrorThatSaysSo) {
  if (test_device() != CPU)
    GTEST_SKIP() << "the CPU's answer to a CUDA extension";
  ExecResult r = evaluate_extension("gelu_fused", "cuda_on_cpu");
  EXPECT_EQ(Verdict_Name(r.verdict()), "COMPILE_ERROR") << summary_line(r);
  EXPECT_NE(r.message().find("--device cuda"), std::string::npos) << r.message();
}

TEST(Extensions, AreBuiltAheadCachedAndJudged) {
  if (const std::string missing = gpu_missing("CUDA extensions"); !missing.empty())
    GTEST_SKIP() << missing;
  ExecResult first = evaluate_extension("gelu_fused", "cuda_fused");
  EXPECT_EQ(Verdict_Name(first.verdict()), "OK") << summary_line(first) << "\n" << first.log();
  EXPECT_GT(seconds_of(first, "extension_compile"), 0.0) << "the first evaluation builds it";
  ExecResult again = evaluate_extension("gelu_fused", "cuda_fused_again");
  EXPECT_EQ(Verdict_Name(again.verdict()), "OK") << summary_line(again);
  EXPECT_EQ(seconds_of(again, "extension_compile"), 0.0) << "the second finds it in the cache";
  std::cout << "cuda_fused: built in " << seconds_of(first, "extension_compile") << " s, evaluation " << first.wall_s()
            << " s; cached: evaluation " << again.wall_s() << " s, speedup " << again.speedup() << "\n";

  ExecResult wrong = evaluate_extension("gelu_wrong", "cuda_wrong");
  EXPECT_EQ(Verdict_Name(wrong.verdict()), "INCORRECT") << summary_line(wrong);

  ExecResult plugin = evaluate_extension("refused_flags", "cuda_plugin");
  EXPECT_EQ(Verdict_Name(plugin.verdict()), "COMPILE_ERROR") << summary_line(plugin);
  EXPECT_NE(plugin.message().find("-fplugin"), std::string::npos) << plugin.message();

  ExecResult changed = evaluate_extension("sources_change", "cuda_sources_change");
  EXPECT_EQ(Verdict_Name(changed.verdict()), "COMPILE_ERROR") << summary_line(changed);
  EXPECT_NE(changed.message().find("not built ahead"), std::string::npos) << changed.message();

  ExecResult poison = evaluate_extension("poisons_cache", "cuda_poisons_cache");
  EXPECT_EQ(Verdict_Name(poison.verdict()), "OK") << summary_line(poison);
  ExecResult after = evaluate_extension("gelu_fused", "cuda_fused_after_poison");
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after) << "\n" << after.log();
  EXPECT_EQ(seconds_of(after, "extension_compile"), 0.0);
}

// Two executors build at once, each builder under a uid of its own: a candidate whose import
// (recorded by its builder, then loaded as the candidate) spends 20 s signalling whatever it
// can and rewriting every build directory it can find or guess reaches nothing of the other
// executor's build, which compiles an extension nobody built before and judges it OK.
TEST(Extensions, ACandidateReachesNoOtherExecutorsBuild) {
  if (const std::string missing = gpu_missing("CUDA extensions"); !missing.empty())
    GTEST_SKIP() << missing;
  std::string fresh_source = read_text(source_path("tests/extensions/gelu_fused.py"));
  const std::string marker = "#include <cuda_runtime.h>\n";
  ASSERT_NE(fresh_source.find(marker), std::string::npos);
  // Sources no earlier run had: its build is real, and runs while the other candidate attacks.
  fresh_source = replace_all(fresh_source, marker,
                             marker + "// build " + std::to_string(::getpid()) + "-" +
                                 std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n");
  sandbox_evaluator other(test_executor_options());
  ExecResult honest;
  std::thread building([&] { honest = other.evaluate(request_for("gelu_scale_residual", "cuda_fresh_build", fresh_source)); });
  ExecResult attacker = evaluate_extension("harms_other_builds", "cuda_harms_other_builds");
  building.join();
  EXPECT_NE(attacker.message().find("harmed: []"), std::string::npos) << summary_line(attacker);
  EXPECT_EQ(Verdict_Name(honest.verdict()), "OK") << summary_line(honest) << "\n" << honest.log();
  EXPECT_GT(seconds_of(honest, "extension_compile"), 0.0) << "the other executor built its extension";
  ExecResult after = evaluate_extension("gelu_fused", "cuda_fused_after_harm");
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
}

// Containment: what kgym's caller has (its environment's secrets, a host file open on a
// descriptor) never reaches the sandbox; a fresh evaluator, started after both were set up.
TEST(Containment, SecretsAndInheritedDescriptorsStayOutside) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  // Outside /tmp (the sandbox's private /tmp would hide the path, not the descriptor).
  const std::string canary_file = (std::filesystem::current_path() / "kgym_inherited_fd_canary.txt").string();
  { std::ofstream(canary_file) << "host data\n"; }
  int opened = ::open(canary_file.c_str(), O_WRONLY | O_APPEND);  // no O_CLOEXEC: inherited by any child
  ASSERT_GE(opened, 0);
  // A free descriptor past the low ones (F_DUPFD takes the lowest free from 100): a fixed
  // number (dup2 onto 9) silently closed whatever the shared evaluator had there, its zygote's
  // command pipe in one GPU shard's order, and that zygote ended on the end of its input.
  const int fd = ::fcntl(opened, F_DUPFD, 100);
  ASSERT_GE(fd, 100);
  ::close(opened);
  ::setenv("KGYM_CANARY_SECRET", "canary-5d3a9f", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "canary-aws-7e21", 1);
  ExecResult r;
  {
    sandbox_evaluator fresh(test_executor_options());
    r = fresh.evaluate(appended_request("leaks_host"));
  }
  ::close(fd);
  ::unsetenv("KGYM_CANARY_SECRET");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  EXPECT_EQ(Verdict_Name(r.verdict()), "COMPILE_ERROR") << summary_line(r);
  EXPECT_NE(r.message().find("leaked: {}"), std::string::npos) << r.message();
  EXPECT_EQ(r.DebugString().find("canary"), std::string::npos) << r.DebugString().substr(0, 2000);
  EXPECT_EQ(read_text(canary_file), "host data\n") << "the candidate wrote into kgym's caller's file";
  std::filesystem::remove(canary_file);
}

// Containment: the files the executor reads from the candidate's directory (its log, its
// trace) are data, whatever the candidate put there: a link to a host file only kgym may read
// is not followed, a FIFO does not block the executor.
TEST(Containment, FilesTheCandidateReplacedAreReadAsData) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  const std::string canary_file = (std::filesystem::current_path() / "kgym_link_canary.txt").string();
  { std::ofstream(canary_file) << "canary-host-file-41c7\n"; }
  std::filesystem::permissions(canary_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ExecRequest request = appended_request("links_its_files");
  request.mutable_candidate()->set_source(replace_all(request.candidate().source(), "@LINK_TARGET@", canary_file));
  const auto started = std::chrono::steady_clock::now();
  ExecResult r = evaluator().evaluate(request);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::filesystem::remove(canary_file);
  EXPECT_EQ(r.DebugString().find("canary-host-file"), std::string::npos) << r.DebugString().substr(0, 2000);
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED") << "its trace was replaced by a FIFO: " << summary_line(r);
  EXPECT_LT(seconds, 120.0) << "the executor waited on the candidate's FIFO";
  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after_links", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
}

// The world-writable directories of this machine (to depth 4; /proc and /sys aside), as the
// test sees them from outside the sandbox.
static std::vector<std::filesystem::path> world_writable_directories() {
  namespace fs = std::filesystem;
  std::vector<fs::path> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator("/", fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (it->is_symlink(ec) || !it->is_directory(ec))
      continue;
    if (p == "/proc" || p == "/sys" || it.depth() >= 4) {
      it.disable_recursion_pending();
      continue;
    }
    if ((fs::status(p, ec).permissions() & fs::perms::others_write) != fs::perms::none) found.push_back(p);
  }
  return found;
}

// No writable host path: a candidate that writes a file into every world-writable directory
// it finds leaves none behind (its private /tmp, /var/tmp and /dev/shm go with it), nor does
// one that first unmounts what it can of its mount namespace and remounts the host writable
// (unprivileged, it is root of a user namespace: it left files in the host's /tmp, /var/tmp and
// /run/lock until its capabilities were dropped).
TEST(Containment, NoWorldWritableHostDirectoryKeepsAFile) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  const auto directories = world_writable_directories();
  ASSERT_FALSE(directories.empty()) << "no world-writable directory to check (expected at least /tmp)";
  for (const std::string name : {"writes_host", "unmounts_private_tmp"}) {
    ExecResult r = evaluator().evaluate(appended_request(name));
    EXPECT_EQ(Verdict_Name(r.verdict()), "OK") << summary_line(r);
    std::vector<std::string> kept;
    for (const auto& d : directories)
      if (std::filesystem::exists(d / "kgym-host-canary")) {
        kept.push_back(d.string());
        std::filesystem::remove(d / "kgym-host-canary");
      }
    EXPECT_TRUE(kept.empty()) << name << ": a file left in " << kept.size() << " of " << directories.size()
                              << " world-writable directories, e.g. " << (kept.empty() ? "" : kept.front());
    if (::geteuid() != 0) {
      EXPECT_TRUE(granted(r, "candidate:no_capabilities")) << name << ": unprivileged, the candidate is uid 0 of a user namespace and must hold "
                           << "no capability there: " << summary_line(r);
    }
  }
}

// Whether this process may make a user namespace (what an unprivileged kgym's zygote needs
// for a pid namespace per candidate): tried in a child, which exits with the answer.
static bool user_namespaces_granted() {
  pid_t child = ::fork();
  if (child == 0) _exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A helper process with a CUDA context of its own that fills the candidate's outputs (hostile
// works_in_helper) is seen twice, each way enough alone: the zygote finds its context on the
// GPU (NVML), and the candidate's trace holds the call that shared its buffers (CUDA IPC).
TEST(Containment, AHelperProcessOnTheGpuIsSeenTwice) {
  if (const std::string missing = gpu_missing("a CUDA context of a helper's"); !missing.empty())
    GTEST_SKIP() << missing;
  ExecResult r = evaluator().evaluate(
      request_for("square_matmul", "works_in_helper_seen_twice", read_text(source_path("tests/hostile/works_in_helper.py"))));
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED") << summary_line(r);
  EXPECT_TRUE(has_evidence(r, GPU_PROCESS_OUTSIDE_TRACE)) << summary_line(r);
  EXPECT_TRUE(has_evidence(r, DEVICE_MEMORY_SHARED)) << summary_line(r);
  EXPECT_TRUE(granted(r, "candidate:gpu_watch")) << summary_line(r);
}

// Where NVML is missing or blind (here switched off: the zygote's --no-nvml-watch), the watch
// reads the candidate's processes' descriptors: a helper (one that works on its own inputs, or
// one that writes the judge's buffers handed on to it) opened the GPU's device nodes itself, so
// it is seen all the same, and the candidate's own process (which holds them too) and
// an honest candidate are not mistaken for one.
TEST(Containment, WithoutNvmlAHelperOnTheGpuIsSeenByItsDescriptors) {
  if (const std::string missing = gpu_missing("a CUDA context of a helper's"); !missing.empty())
    GTEST_SKIP() << missing;
  executor_options options = test_executor_options();
  options.launch.nvml_watch = false;
  sandbox_evaluator by_descriptors(options);
  ExecResult r = by_descriptors.evaluate(
      request_for("square_matmul", "works_in_helper_by_descriptors", read_text(source_path("tests/hostile/works_in_helper.py"))));
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED") << summary_line(r);
  EXPECT_TRUE(has_evidence(r, GPU_PROCESS_OUTSIDE_TRACE)) << summary_line(r);
  EXPECT_TRUE(granted(r, "candidate:gpu_watch_by_descriptors")) << summary_line(r);
  // The helper that writes the judge's own buffers opened the GPU itself too.
  ExecResult handed = by_descriptors.evaluate(request_for(
      "square_matmul", "hands_buffers_by_descriptors", read_text(source_path("tests/hostile/hands_buffers_to_helper.py"))));
  EXPECT_EQ(Verdict_Name(handed.verdict()), "HACKED") << summary_line(handed);
  EXPECT_TRUE(has_evidence(handed, GPU_PROCESS_OUTSIDE_TRACE)) << summary_line(handed);
  for (const char* name : {"correct", "fork_leftover"}) {
    ExecResult honest = by_descriptors.evaluate(appended_request(name));
    EXPECT_EQ(Verdict_Name(honest.verdict()), "OK") << name << ": " << summary_line(honest);
    EXPECT_TRUE(granted(honest, "candidate:gpu_watch_by_descriptors")) << name << ": " << summary_line(honest);
  }
}

// Evaluations cannot see each other: a candidate that stops every process it can see (the
// prepared next evaluation's candidate, were it the same uid) sees none, and the evaluation
// after it is OK. As root, and unprivileged where the OS grants a user namespace, it runs as
// pid 1 of a pid namespace of its own (unprivileged, before that, it stopped the judge and the
// zygote of its own uid: the evaluation never ended).
TEST(Containment, ACandidateSeesAndStopsNoOtherProcess) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecResult r = evaluator().evaluate(appended_request("stops_siblings"));
  EXPECT_NE(r.message().find("seen 0 stopped 0"), std::string::npos) << r.message();
  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after_stopping", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
  const bool hidden = granted(r, "candidate:hidepid"), own_pids = granted(r, "candidate:pidns");
  EXPECT_TRUE(hidden || ::geteuid() != 0) << "as root the candidate's /proc hides other uids";
  if (::geteuid() == 0 || user_namespaces_granted()) {  // a pid namespace of its own: it is pid 1 there
    EXPECT_TRUE(own_pids) << summary_line(r);
    EXPECT_NE(r.message().find("pid 1 seen"), std::string::npos) << r.message();
  }
}

// Only its own descriptors: the zygote forks the next evaluation's processes while it holds
// the running one's pipes and sockets; a candidate that looks for them and writes a forged
// frame into each fails with its own error (before the sweep one frame reached the executor,
// which ruled the channel forged). On the CPU, where nothing else makes pipes, it finds its own
// channel and its own hold pipe only (CUDA and CUPTI make pipes and sockets of their own).
// (A held copy of the hold pipe's write end also kept the last candidate process from ever
// seeing its end: it was killed at the 1 s deadline after every evaluation.)
TEST(Containment, ACandidateHoldsOnlyItsOwnDescriptors) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecResult before = evaluator().evaluate(request_for("gelu_scale_residual", "correct_before_fds", fused_candidate()));
  EXPECT_EQ(Verdict_Name(before.verdict()), "OK") << summary_line(before);
  ExecResult r = evaluator().evaluate(appended_request("holds_inherited_fds"));
  EXPECT_NE(r.message().find(test_device() == CUDA ? "RuntimeError: pipes " : "pipes 1 sockets 1"), std::string::npos)
      << r.message();
  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after_fds", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
}

// The candidate's tasks are bounded as a tree: where a pids cgroup is granted (as root with a
// pids hierarchy: candidate:pids_cgroup=N) the threads it starts stop below N; else the
// executor counts its pid namespace (candidate:tasks_by_polling=N) and stops it past N
// (RESOURCE_LIMIT, evidence tasks_limit), or RLIMIT_NPROC (1024 for its uid) stops them.
// Either way the next evaluation is OK.
TEST(Containment, TheCandidatesTasksAreBounded) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecResult r = evaluator().evaluate(appended_request("spawns_threads"));
  auto granted = [&r](const std::string& prefix) -> long {
    for (const auto& g : r.isolation())
      if (g.rfind(prefix, 0) == 0)
        return std::stol(g.substr(prefix.size()));
    return 0;
  };
  // Held by the kernel: a pids cgroup (root) or RLIMIT_NPROC in the candidate's own user
  // namespace (unprivileged); else the executor's count each tick.
  const long cgroup = granted("candidate:pids_cgroup="), own = granted("candidate:tasks_by_userns="),
             polled = granted("candidate:tasks_by_polling=");
  const long kernel = cgroup > 0 ? cgroup : own;
  if (kernel == 0 && polled > 0) {
    EXPECT_EQ(Verdict_Name(r.verdict()), "RESOURCE_LIMIT") << summary_line(r);
    EXPECT_TRUE(has_evidence(r, TASKS_LIMIT)) << summary_line(r);
  } else {
    const auto at = r.message().find("threads ");
    ASSERT_NE(at, std::string::npos) << summary_line(r);
    const long started = std::stol(r.message().substr(at + 8));
    EXPECT_LT(started, kernel > 0 ? kernel : 1024) << summary_line(r);
    EXPECT_GT(started, 0) << summary_line(r);
  }
  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after_threads", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
}

// Mount points in this process's sandboxes (work roots are named kgym-sandbox-PID-N).
static int sandbox_mounts() {
  const std::string mine = "/kgym-sandbox-" + std::to_string(::getpid()) + "-";
  auto count = [&](const std::string& mountinfo_file) {
    std::ifstream mountinfo(mountinfo_file);
    int n = 0;
    for (std::string line; std::getline(mountinfo, line);) n += line.find(mine) != std::string::npos;
    return n;
  };
  int n = count("/proc/self/mountinfo");
  // Unprivileged, the zygote (a child of this process) mounts the private disks in a mount
  // namespace of its own.
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path own_namespace = fs::read_symlink("/proc/self/ns/mnt", ec);
  for (int child : live_children_of(::getpid())) {
    const fs::path proc = "/proc/" + std::to_string(child);
    std::error_code unreadable;
    if (fs::read_symlink(proc / "ns" / "mnt", unreadable) != own_namespace && !unreadable)
      n += count((proc / "mountinfo").string());
  }
  return n;
}

// What is left under this process's sandboxes of a file whose name starts with `prefix`, or a
// directory the test may not enter (a locked one a removal stopped at).
static std::vector<std::string> left_in_sandboxes(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::vector<std::string> left;
  const std::string mine = "kgym-sandbox-" + std::to_string(::getpid()) + "-";
  std::error_code ec;
  for (const auto& root : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    if (root.path().filename().string().rfind(mine, 0) != 0)
      continue;
    for (auto it = fs::recursive_directory_iterator(root.path(), ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->path().filename().string().rfind(prefix, 0) == 0)
        left.push_back(it->path().string());
    if (ec)
      left.push_back("(unreadable under " + root.path().string() + ": " + ec.message() + ")");
    ec.clear();
  }
  return left;
}

// A disk quota: the candidate's private /tmp, /var/tmp and /dev/shm are one tmpfs of the
// request's size (as root; unprivileged, in the zygote's own mount namespace), or, where
// neither is granted, one directory the executor counts by walking it (a directory locked
// against the walk included); filling it fails the candidate with
// RESOURCE_LIMIT, and its mount and files are gone with the evaluation (only the prepared
// next ones' mounts stay).
TEST(Containment, ThePrivateDiskIsBoundedAndGoes) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecRequest request = appended_request("fills_disk");
  request.mutable_options()->set_disk_limit_mb(64);
  ExecResult r = evaluator().evaluate(request);
  const bool bounded = granted(r, "candidate:private_disk=64MiB"), polled = granted(r, "candidate:disk_by_polling=64MiB");
  if (::geteuid() == 0 || user_namespaces_granted())
    EXPECT_TRUE(bounded) << "as root, or root of its own user and mount namespace, the candidate's private disk is "
                            "a tmpfs of the request's size: " << summary_line(r);
  else
    EXPECT_TRUE(polled) << "without either the executor counts the candidate's directory: " << summary_line(r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "RESOURCE_LIMIT") << summary_line(r);
  EXPECT_NE(r.message().find("private disk"), std::string::npos) << r.message();
  EXPECT_TRUE(has_evidence(r, DISK_LIMIT)) << summary_line(r);
  EXPECT_LE(sandbox_mounts(), static_cast<int>(prepared_evaluations)) << "a private disk outlived its evaluation";
  EXPECT_EQ(left_in_sandboxes("fill-"), std::vector<std::string>{}) << "the candidate's files outlived it";
  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after_filling", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
  EXPECT_LE(sandbox_mounts(), static_cast<int>(prepared_evaluations)) << "a private disk outlived its evaluation";
}

// A hostile helper appended to the GELU candidate, under the memory tests' limit (1 GiB; 2 GiB on
// the GPU, where CUDA's own host memory counts).
ExecRequest memory_limited_request(const std::string& name) {
  ExecRequest request = appended_request(name);
  // The candidate's memory alone (its CUDA process holds about 0.5 GiB more than on the CPU):
  // hides_memory's 1.5 GiB goes over, forks_workers' 256 MiB does not.
  request.mutable_options()->set_memory_limit_mb(test_device() == CUDA ? 1536 : 1024);
  return request;
}

// Memory that cannot hide: a memfd file and children that left the candidate's session count
// (its cgroup, as root where the machine grants one; unprivileged, every process of its pid
// namespace and the memfd files they hold), so 1.5 GiB of them under a 1 GiB limit is
// RESOURCE_LIMIT, and the evaluation after it is OK.
TEST(Containment, MemoryHeldOutsideTheProcessCounts) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecRequest request = memory_limited_request("hides_memory");
  ExecResult r = evaluator().evaluate(request);
  const bool cgroup = granted(r, "candidate:memory_cgroup"), pidns = granted(r, "candidate:memory_by_pidns");
  if (::geteuid() == 0) {
    EXPECT_TRUE(cgroup) << "as root kgym expects a memory cgroup here: " << summary_line(r);
  } else if (user_namespaces_granted()) {
    EXPECT_TRUE(pidns) << "unprivileged, the candidate's pid namespace counts: " << summary_line(r);
  }
  if (!cgroup && !pidns) {  // neither granted here: say so, the verdict is the session's count
    std::cout << "no memory cgroup and no pid namespace on this machine: " << summary_line(r) << "\n";
    return;
  }
  EXPECT_EQ(Verdict_Name(r.verdict()), "RESOURCE_LIMIT") << summary_line(r);
  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after_hiding", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
}

// Forked children share their parent's pages, and each page counts once: a candidate whose
// eight children show its 256 MiB each (over 2 GiB summed by resident size) stays within 1 GiB,
// counted by its cgroup and, without one, by the proportional set sizes of its uid's processes
// (as root) or its pid namespace's (unprivileged). Summed resident sizes made contends_cpu's 64
// spinning children on a 64-core host read as 16 GiB: RESOURCE_LIMIT for an honest candidate.
TEST(Containment, ForkedChildrenAreChargedEachPageOnce) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecRequest request = memory_limited_request("forks_workers");
  ExecResult r = evaluator().evaluate(request);
  EXPECT_EQ(Verdict_Name(r.verdict()), "OK") << summary_line(r);
  EXPECT_FALSE(has_evidence(r, MEMORY_LIMIT)) << summary_line(r);
  if (::geteuid() != 0)
    return;
  executor_options options = test_executor_options();
  options.launch.memory_cgroup = false;
  sandbox_evaluator no_cgroup(options);
  ExecResult by_uid = no_cgroup.evaluate(request);
  EXPECT_TRUE(granted(by_uid, "candidate:memory_by_uid")) << summary_line(by_uid);
  EXPECT_EQ(Verdict_Name(by_uid.verdict()), "OK") << summary_line(by_uid);
}

// Without a cgroup (the zygote's --no-memory-cgroup, as on a machine that grants none), as root
// the executor counts everything running as the candidate's uid and the memfd files it holds:
// the same candidate is held all the same.
TEST(Containment, WithoutACgroupTheCandidatesUidIsCounted) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  if (::geteuid() != 0)
    GTEST_SKIP() << "the uid fallback needs root (candidates then run as uids of their own)";
  executor_options options = test_executor_options();
  options.launch.memory_cgroup = false;
  sandbox_evaluator no_cgroup(options);
  ExecRequest request = memory_limited_request("hides_memory");
  ExecResult r = no_cgroup.evaluate(request);
  EXPECT_FALSE(granted(r, "candidate:memory_cgroup"));
  EXPECT_TRUE(granted(r, "candidate:memory_by_uid")) << summary_line(r);
  EXPECT_EQ(Verdict_Name(r.verdict()), "RESOURCE_LIMIT") << summary_line(r);
  ExecResult after = no_cgroup.evaluate(request_for("gelu_scale_residual", "correct_after_uid", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
}

// A limit for the whole evaluation: a candidate that stays under each phase's limit still
// ends in TIMEOUT once the total is spent.
TEST(Containment, TheWholeEvaluationHasATimeLimit) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecRequest request = appended_request("paces_phases");
  auto* o = request.mutable_options();
  o->set_load_timeout_s(4);
  o->set_correctness_timeout_s(4);
  o->set_timing_timeout_s(4);
  o->set_total_timeout_s(5);
  ExecResult r = evaluator().evaluate(request);
  EXPECT_EQ(Verdict_Name(r.verdict()), "TIMEOUT") << summary_line(r);
  EXPECT_NE(r.message().find("total limit of 5 s"), std::string::npos) << r.message();
  ExecResult after = evaluator().evaluate(request_for("gelu_scale_residual", "correct_after_pacing", fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
}

// The evaluators' zygotes: this process's children running kgym_sandbox.zygote.
std::vector<int> zygote_pids() {
  std::vector<int> found;
  for (int pid : live_children_of(::getpid())) {
    std::string cmdline;
    try {
      cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    } catch (...) {
      continue;
    }
    if (cmdline.find("kgym_sandbox.zygote") != std::string::npos)
      found.push_back(pid);
  }
  return found;
}

// The shared evaluator's zygote.
int zygote_pid() {
  auto found = zygote_pids();
  return found.empty() ? 0 : found.front();
}

// An executor that serves starts its sandbox before any request (actors/gpu_executor): the
// zygote prepares the first evaluations' processes at once, as it does for every later one, and
// the first request is handed those.
TEST(Containment, TheSandboxStartsWithItsFirstEvaluationsPrepared) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  const auto before = zygote_pids();
  sandbox_evaluator fresh(test_executor_options());
  ASSERT_EQ(fresh.start(), "");
  int zygote = 0;
  for (int pid : zygote_pids())
    if (std::find(before.begin(), before.end(), pid) == before.end())
      zygote = pid;
  ASSERT_GT(zygote, 0) << "no new kgym_sandbox.zygote below this process";
  // Each prepared evaluation is three processes (judge, candidate, reference runner).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (live_children_of(zygote).size() < 3 * prepared_evaluations && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(live_children_of(zygote).size(), 3 * prepared_evaluations) << "before any request";
  ExecResult first = fresh.evaluate(request_for("gelu_scale_residual", "correct_first", fused_candidate()));
  EXPECT_EQ(Verdict_Name(first.verdict()), "OK") << summary_line(first);
  EXPECT_EQ(fresh.zygote_starts(), 1);
}

// The speedup's relative standard error is in the result and in its message (a trainer may weigh
// a reward whose timing reached its cap imprecise less): timed at the defaults, enough pairs.
TEST(Timing, TellsTheSpeedupsErrorInItsMessage) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecRequest request = request_for("gelu_scale_residual", "error_told", fused_candidate());
  request.mutable_options()->clear_timing_reps();  // the defaults: timed to a precision or the cap
  ExecResult r = evaluator().evaluate(request);
  ASSERT_EQ(Verdict_Name(r.verdict()), "OK") << summary_line(r);
  ASSERT_GT(r.speedup_rse(), 0.0) << summary_line(r);
  char speedup[48];
  std::snprintf(speedup, sizeof speedup, "speedup %.3fx +-%.1f%%", r.speedup(), 100 * r.speedup_rse());
  EXPECT_EQ(r.message(), std::string("correct, ") + speedup);
  EXPECT_NE(summary_line(r).find(speedup), std::string::npos) << summary_line(r);
}

// KGYM_TRACE_ARCHIVE (bench/identity_kernels.py, bench/batch_share_parts.py): every evaluation's
// trace is kept, the second of one request id beside the first (each `kgym check` numbers its
// requests from check-1 again).
TEST(TraceArchive, KeepsEveryEvaluationsTrace) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  const auto archive = std::filesystem::temp_directory_path() / ("kgym-archive-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(archive);
  auto options = test_executor_options();
  options.trace_archive = archive.string();
  sandbox_evaluator archiving(options);
  for (int i = 0; i < 2; ++i) {
    ExecResult r = archiving.evaluate(request_for("gelu_scale_residual", "archived", fused_candidate()));
    EXPECT_EQ(Verdict_Name(r.verdict()), "OK") << summary_line(r);
  }
  for (const char* name : {"gelu_scale_residual_archived.jsonl", "gelu_scale_residual_archived~2.jsonl"}) {
    EXPECT_GT(std::filesystem::exists(archive / name) ? std::filesystem::file_size(archive / name) : 0u, 0u) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(archive / "gelu_scale_residual_archived~3.jsonl"));
  std::filesystem::remove_all(archive);
}

// A candidate cannot reach the evaluations prepared after it (ACandidateSeesAndStopsNoOtherProcess);
// if something else harms them anyway (here the test, as kgym's own uid, stops every process the
// zygote holds ready), the zygote sees it before it hands over the next request and makes fresh
// processes: that innocent request is OK, well within its load limit, instead of a TIMEOUT on a
// stopped judge.
TEST(Containment, AHarmedPreparedEvaluationIsReplaced) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecResult before = evaluator().evaluate(request_for("gelu_scale_residual", "correct_before_harm", fused_candidate()));
  ASSERT_EQ(Verdict_Name(before.verdict()), "OK") << summary_line(before);
  const int zygote = zygote_pid();
  ASSERT_GT(zygote, 0) << "no kgym_sandbox.zygote below this process";
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the finished evaluation's processes exit
  std::vector<int> stopped = live_children_of(zygote);
  ASSERT_GE(stopped.size(), 3u) << "no prepared evaluation (judge, candidate, reference runner) to harm";
  for (int pid : stopped)
    ::kill(pid, SIGSTOP);
  ExecRequest innocent = request_for("gelu_scale_residual", "correct_after_harm", fused_candidate());
  innocent.mutable_options()->set_load_timeout_s(20);
  ExecResult after = evaluator().evaluate(innocent);
  for (int pid : stopped)
    ::kill(pid, SIGCONT);  // whatever of them the zygote kept
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after);
  EXPECT_LT(after.wall_s(), 20) << summary_line(after);
}

// The zygote SIGKILLed after a first evaluation (by whatever: here the test, as kgym's own
// uid), `pause` before the next request: that request, nothing of which had run, is answered
// OK, not INTERNAL_ERROR ("the sandbox did not start the evaluation"), and takes one new zygote.
void expect_a_killed_zygote_to_cost_no_request(const std::string& name, std::chrono::milliseconds pause) {
  sandbox_evaluator fresh(test_executor_options());
  ExecResult before = fresh.evaluate(request_for("gelu_scale_residual", "correct_before_" + name, fused_candidate()));
  ASSERT_EQ(Verdict_Name(before.verdict()), "OK") << summary_line(before);
  ASSERT_GT(fresh.zygote_pid(), 0);
  ASSERT_EQ(::kill(fresh.zygote_pid(), SIGKILL), 0);
  std::this_thread::sleep_for(pause);
  ExecResult after = fresh.evaluate(request_for("gelu_scale_residual", "correct_after_" + name, fused_candidate()));
  EXPECT_EQ(Verdict_Name(after.verdict()), "OK") << summary_line(after) << "\n" << after.log();
  EXPECT_EQ(fresh.zygote_starts(), 2);
}

// Killed while it waits for work: the next request finds it gone (reaped) before sending it
// anything and starts a new one.
TEST(Containment, AZygoteGoneWhileIdleCostsNoRequest) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  expect_a_killed_zygote_to_cost_no_request("zygote_gone", std::chrono::seconds(1));  // gone, not yet collected
}

// Killed just as a request arrives (seen once on an H200, cause unknown: the zygote died without
// a word as the next evaluation reached it): still running when the executor looked, gone when
// it read the answer to its command; the request goes to a new zygote.
TEST(Containment, AZygoteGoneAsARequestArrivesCostsNoRequest) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  expect_a_killed_zygote_to_cost_no_request("zygote_killed", std::chrono::milliseconds(0));  // no pause
}

// kgym's own processes short of GPU memory (here: a task whose inputs cannot fit) is never
// the candidate's verdict: the executor evaluates again, then says whose shortage it was.
TEST(DeviceMemory, KgymsOwnShortageIsRetriedNotBlamed) {
  if (const std::string missing = gpu_missing("GPU memory"); !missing.empty())
    GTEST_SKIP() << missing;
  ExecRequest request = request_for("gelu_scale_residual", "correct_too_big",
                                    fused_candidate());
  request.mutable_task()->set_source(request.task().source() + R"(
_get_inputs = get_inputs
def get_inputs():
    torch.empty(1 << 40, dtype=torch.uint8)  # a terabyte: more than any GPU has
    return _get_inputs()
)");
  ExecResult result = evaluator().evaluate(request);
  EXPECT_EQ(Verdict_Name(result.verdict()), "INTERNAL_ERROR") << summary_line(result);
  EXPECT_TRUE(result.own_device_memory_exhausted());
  EXPECT_EQ(result.attempts(), executor_options{}.own_memory_attempts);
  EXPECT_NE(result.message().find("kgym's own processes ran out of GPU memory"), std::string::npos)
      << result.message();
}

// A task whose outputs change shape from one input set to the next cannot be compared or
// timed in buffers of one shape: the task's fault, said so, never the candidate's.
TEST(Shapes, OutputsThatChangeShapeAreTheTasksFault) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  ExecRequest request = request_for("gelu_scale_residual", "correct_varying",
                                    fused_candidate());
  request.mutable_task()->set_source(request.task().source() + R"(
def get_inputs():
    rows = int(torch.randint(1, 64, (1,)))  # under the judge's seed: a new height per set
    return [torch.randn(rows, dim)]
)");
  ExecResult result = evaluator().evaluate(request);
  EXPECT_EQ(Verdict_Name(result.verdict()), "INTERNAL_ERROR") << summary_line(result);
  EXPECT_NE(result.message().find("outputs change shape"), std::string::npos) << result.message();
}

// Coverage, on either device: CUPTI on the GPU, the CPU cost model on the CPU.
TEST(Coverage, SeparatesFusedFromLazy) {
  if (test_device() == CUDA && !gpu_present())
    GTEST_SKIP() << "KGYM_TEST_DEVICE=cuda but this machine has no GPU";
  auto shipped = [](const std::string& task, const std::string& candidate) {
    return evaluator().evaluate(request_for(
        task, candidate, read_text(source_path("tasks/" + task + "/candidates/" + candidate + ".py"))));
  };
  ExecResult fused = shipped("matmul_bias_relu", "fused");
  ExecResult lazy = shipped("matmul_bias_relu", "lazy");
  ASSERT_EQ(Verdict_Name(fused.verdict()), "OK") << summary_line(fused);
  ASSERT_EQ(Verdict_Name(lazy.verdict()), "OK") << summary_line(lazy);
  EXPECT_GT(fused.profile().coverage(), 0.9) << fused.profile().DebugString();
  EXPECT_LT(lazy.profile().coverage(), 0.2) << lazy.profile().DebugString();
  EXPECT_EQ(fused.profile().evidence_source(), test_device() == CUDA ? "cupti" : "cpu_cost_model");
}

INSTANTIATE_TEST_SUITE_P(Candidates, HostileSuite, ::testing::ValuesIn(cases),
                         [](const ::testing::TestParamInfo<hostile_case>& info) { return case_name(info.param); });

}  // namespace
}  // namespace kgym::test
