#include "gpu/executor/eval_defaults.hpp"

namespace kgym {

EvalOptions with_defaults(EvalOptions o, Device device) {
  bool cuda = device == CUDA;
  if (o.correctness_trials() <= 0) o.set_correctness_trials(5);
  if (o.atol() <= 0) o.set_atol(1e-2);
  if (o.rtol() <= 0) o.set_rtol(1e-2);
  if (o.warmup_reps() <= 0) o.set_warmup_reps(3);
  if (o.timing_reps() <= 0) o.set_timing_reps(cuda ? 1000 : 5);  // cuda: min_timed_s usually stops first
  if (o.seed() == 0) o.set_seed(42);
  if (o.load_timeout_s() <= 0) o.set_load_timeout_s(60);
  if (o.correctness_timeout_s() <= 0) o.set_correctness_timeout_s(cuda ? 180 : 300);
  if (o.timing_timeout_s() <= 0) o.set_timing_timeout_s(cuda ? 120 : 300);
  if (o.memory_limit_mb() <= 0) o.set_memory_limit_mb(cuda ? 16384 : 4096);
  if (o.min_timed_s() <= 0) o.set_min_timed_s(cuda ? 1.0 : 0.5);
  if (o.traced_reps() <= 0) o.set_traced_reps(5);
  return o;
}

}  // namespace kgym
