#include "policy/filters.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kgym {

mrs_verdict mismatch_rejection(const std::vector<double>& logp_trainer, const std::vector<double>& logp_rollout,
                               const mrs_bounds& bounds) {
  if (logp_trainer.size() != logp_rollout.size() || logp_trainer.empty())
    throw std::invalid_argument("MRS needs one trainer and one rollout log-prob per token");
  double sum = 0, min_ratio = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < logp_trainer.size(); ++i) {
    double log_ratio = logp_trainer[i] - logp_rollout[i];
    sum += log_ratio;
    min_ratio = std::min(min_ratio, std::exp(log_ratio));
  }
  double geometric = std::exp(sum / static_cast<double>(logp_trainer.size()));
  bool keep = geometric >= bounds.low && geometric <= bounds.high && min_ratio >= bounds.min_token;
  return {keep, geometric, min_ratio};
}

double prs_keep_probability(bool correct, double coverage, double threshold, double width) {
  if (!correct)
    return 1.0;
  return std::clamp((coverage - threshold) / width, 0.0, 1.0);
}

}  // namespace kgym
