// Sample filters of the learner: mismatch rejection (MRS) and profiling-based rejection (PRS).
#pragma once

#include <vector>

namespace kgym {

struct mrs_bounds {
  double low = 0.999;       // geometric-mean ratio must stay within [low, high]
  double high = 1.001;
  double min_token = 1e-4;  // any token ratio below this rejects the sequence
};

struct mrs_verdict {
  bool keep;
  double geometric_mean_ratio;
  double min_token_ratio;
};

// Per-token ratio rho = exp(logp_trainer - logp_rollout). A sequence is rejected when the
// geometric mean of rho leaves [low, high] or when one token's rho is below min_token.
mrs_verdict mismatch_rejection(const std::vector<double>& logp_trainer, const std::vector<double>& logp_rollout,
                               const mrs_bounds& bounds = {});

// PRS: a correct turn is kept with probability clamp((coverage - threshold) / width, 0, 1);
// an incorrect turn is always kept.
double prs_keep_probability(bool correct, double coverage, double threshold = 0.3, double width = 0.1);

}  // namespace kgym
