// Returns and advantages for groups of multi-turn episodes on the same task.
#pragma once

#include <vector>

namespace kgym {

// rewards[t] of one episode -> G_t = sum_{k >= t} gamma^(k - t) * rewards[k].
std::vector<double> reward_to_go(const std::vector<double>& rewards, double gamma = 1.0);

// returns[i][t]: return-to-go of episode i at turn t; episodes may end at different turns.
// TRLOO: A[i][t] = R[i][t] - mean of R[j][t] over the other episodes j that reached turn t
// (leave-one-out: the baseline excludes the sample itself). With n = 1 at a turn, A = R.
std::vector<std::vector<double>> trloo_advantages(const std::vector<std::vector<double>>& returns);

// GRPO, for comparison: (R - mean over all n that reached turn t, self included) / std
// (population std; 0 when all are equal).
std::vector<std::vector<double>> grpo_advantages(const std::vector<std::vector<double>>& returns,
                                                 double epsilon = 1e-6);

}  // namespace kgym
