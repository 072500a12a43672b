// The CUPTI profile on a GPU: coverage separates fused from lazy candidates, and a candidate
// that fools the Python-level launch record is caught from the trace. Label gpu.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "gpu/executor/sandbox_evaluator.hpp"
#include "pipeline/paths.hpp"
#include "pipeline/summary.hpp"
#include "tests/test_support.hpp"

namespace kgym::test {
namespace {

class Profile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    executor_options options;
    options.launch.device = CUDA;
    options.launch.python = python();
    options.launch.sandbox_dir = source_path("gpu/sandbox");
    options.launch.cupti_library = cupti_library();
    options.launch.checks_library = checks_library();
    if (const char* archive = std::getenv("KGYM_TRACE_ARCHIVE"))
      options.trace_archive = archive;
    evaluator_ = std::make_unique<sandbox_evaluator>(options);
  }
  static void TearDownTestSuite() { evaluator_.reset(); }
  void SetUp() override {
    if (!gpu_present())
      GTEST_SKIP() << "no GPU on this machine";
    ASSERT_FALSE(cupti_library().empty()) << "libkgym_cupti.so was not built";
  }
  ExecResult shipped(const std::string& task, const std::string& candidate) {
    auto request = request_for(task, candidate,
                               read_text(source_path("tasks/" + task + "/candidates/" + candidate + ".py")));
    request.set_device(CUDA);
    return evaluator_->evaluate(request);
  }
  // A hostile candidate of tests/hostile/ (appended to the fused gelu candidate).
  ExecResult hostile(const std::string& name) {
    const std::string fused = read_text(source_path("tasks/gelu_scale_residual/candidates/fused.py"));
    auto request = request_for("gelu_scale_residual", name,
                               fused + "\n" + read_text(source_path("tests/hostile/" + name + ".py")));
    request.set_device(CUDA);
    return evaluator_->evaluate(request);
  }
  static bool has_evidence(const ExecResult& r, EvidenceKind kind, const std::string& source) {
    for (const auto& e : r.evidence())
      if (e.kind() == kind && e.source() == source)
        return true;
    return false;
  }
  static std::unique_ptr<sandbox_evaluator> evaluator_;
};
std::unique_ptr<sandbox_evaluator> Profile::evaluator_;

TEST_F(Profile, FusedCandidateHasHighCoverage) {
  for (auto [task, candidate] : {std::pair{"gelu_scale_residual", "fused"}, {"matmul_bias_relu", "fused"}}) {
    ExecResult r = shipped(task, candidate);
    ASSERT_EQ(Verdict_Name(r.verdict()), "OK") << summary_line(r) << r.log();
    EXPECT_EQ(r.profile().evidence_source(), "cupti");
    EXPECT_GT(r.profile().coverage(), 0.9) << task << " " << r.profile().DebugString();
    EXPECT_GT(r.profile().generated_launches_train(), 0);
    EXPECT_GT(r.profile().generated_launches_eval(), 0);
  }
}

TEST_F(Profile, LazyCandidatesHaveLowCoverage) {
  ExecResult lazy = shipped("matmul_bias_relu", "lazy");  // cuBLAS GEMM + a Triton bias/ReLU
  ASSERT_EQ(Verdict_Name(lazy.verdict()), "OK") << summary_line(lazy) << lazy.log();
  EXPECT_LT(lazy.profile().coverage(), 0.2) << lazy.profile().DebugString();
  EXPECT_GT(lazy.profile().coverage(), 0.0);
  ExecResult token = shipped("square_matmul", "token_kernel");  // one token kernel, then cuBLAS
  ASSERT_EQ(Verdict_Name(token.verdict()), "OK") << summary_line(token) << token.log();
  EXPECT_LT(token.profile().coverage(), 0.05) << token.profile().DebugString();
}

TEST_F(Profile, TraceCatchesAForgedLaunchRecord) {
  ExecResult r = hostile("forges_launch_record");
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED") << summary_line(r) << r.log();
  EXPECT_TRUE(has_evidence(r, NO_GENERATED_KERNEL, "cupti")) << summary_line(r);
  EXPECT_EQ(r.profile().generated_launches_train(), 0);
}

// The candidate process answers the judge before its side-stream work has run: the judge's
// clock misses it, and either the CUPTI spans of the traced calls show it or an output the
// judge compares is not ready yet.
TEST_F(Profile, TraceCatchesWorkOutsideTheTimedRegion) {
  ExecResult r = hostile("side_stream");
  EXPECT_EQ(Verdict_Name(r.verdict()), "HACKED") << summary_line(r) << r.log();
  // Where its side-stream work lands decides which check sees it first: past a timed batch's
  // window (seen by the trace; the more likely since every timing has four batches or more),
  // past a traced call, or not yet done when the judge compares.
  EXPECT_TRUE(has_evidence(r, GPU_WORK_BETWEEN_REQUESTS, "cupti") ||
              has_evidence(r, WORK_OUTSIDE_TIMED_REGION, "cupti") ||
              has_evidence(r, WRONG_OUTPUT_WHEN_TIMED, "judge"))
      << summary_line(r);
}

TEST_F(Profile, HonestCandidateKernelsStayInsideTheTimedRegion) {
  ExecResult r = shipped("rmsnorm_rows", "fused");
  ASSERT_EQ(Verdict_Name(r.verdict()), "OK") << summary_line(r) << r.log();
  EXPECT_EQ(r.profile().timed_rep_span_ms_size(), 5);
  ASSERT_EQ(r.traced_rep_ms_size(), 5);
  for (int i = 0; i < 5; ++i)
    EXPECT_LE(r.profile().timed_rep_span_ms(i), r.traced_rep_ms(i) * 1.2 + 0.02) << i;
}

}  // namespace
}  // namespace kgym::test
