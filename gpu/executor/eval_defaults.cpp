#include "gpu/executor/eval_defaults.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace kgym {

namespace {

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

}  // namespace

Precision precision_named(const std::string& name) {
  Precision precision;
  if (!Precision_Parse(upper(name), &precision))
    throw std::invalid_argument("precision must be fp32, fp16 or bf16, got '" + name + "'");
  return precision;
}

ToleranceSet tolerance_set_named(const std::string& name) {
  ToleranceSet set;
  if (!ToleranceSet_Parse(upper(name) + "_TOLERANCES", &set))
    throw std::invalid_argument("tolerances must be kernelbench or dr_kernel, got '" + name + "'");
  return set;
}

double default_tolerance(Precision precision, ToleranceSet tolerances) {
  if (tolerances == DR_KERNEL_TOLERANCES)
    return 1e-2;
  return precision == FP32 ? 1e-4 : 1e-2;  // KernelBench's get_tolerance_for_precision
}

EvalOptions with_defaults(EvalOptions o, Device device) {
  bool cuda = device == CUDA;
  if (o.correctness_trials() <= 0) o.set_correctness_trials(5);
  if (o.atol() <= 0) o.set_atol(default_tolerance(o.precision(), o.tolerances()));
  if (o.rtol() <= 0) o.set_rtol(default_tolerance(o.precision(), o.tolerances()));
  if (o.warmup_reps() <= 0) o.set_warmup_reps(3);
  if (o.timing_reps() <= 0) o.set_timing_reps(cuda ? 1000 : 5);  // cuda: min_timed_s usually stops first
  if (o.seed() == 0) o.set_seed(42);
  if (o.load_timeout_s() <= 0) o.set_load_timeout_s(60);
  if (o.correctness_timeout_s() <= 0) o.set_correctness_timeout_s(cuda ? 180 : 300);
  if (o.timing_timeout_s() <= 0) o.set_timing_timeout_s(cuda ? 120 : 300);
  if (o.memory_limit_mb() <= 0) o.set_memory_limit_mb(cuda ? 16384 : 4096);
  if (o.disk_limit_mb() <= 0) o.set_disk_limit_mb(2048);
  // cuda: more calls a batch where sets are large (l2_1, l2_93: the identity's spread across
  // evaluations halved on an H100); the judge caps it at a sixth of the GPU's free memory.
  if (o.batch_memory_mb() <= 0) o.set_batch_memory_mb(cuda ? 16384 : 4096);
  if (o.min_timed_s() <= 0) o.set_min_timed_s(0.5);
  // cuda: a steady kernel stops at min_timed_s, a noisy one gets up to max_timed_s.
  if (o.timing_precision() <= 0 && cuda) o.set_timing_precision(0.001);
  if (o.max_timed_s() <= 0) o.set_max_timed_s(cuda ? 1.0 : o.min_timed_s());
  if (o.max_timed_s() < o.min_timed_s()) o.set_max_timed_s(o.min_timed_s());
  if (o.traced_reps() <= 0) o.set_traced_reps(5);
  if (o.compile_timeout_s() <= 0) o.set_compile_timeout_s(600);
  if (o.total_timeout_s() <= 0) o.set_total_timeout_s(cuda ? 300 : 600);
  return o;
}

}  // namespace kgym
