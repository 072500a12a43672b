// The numbers of one training iteration (a line of metrics.jsonl), from its episodes.
#pragma once

#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// `lazy_coverage`: a correct turn below this coverage counts as lazy (the PRS threshold).
IterationMetrics iteration_metrics(const std::vector<Episode>& episodes, const LearnerStep& step,
                                   double lazy_coverage, double wall_s);

// The same for a learner's batch (its episodes and wall time).
IterationMetrics iteration_metrics(const IterationBatch& batch, const LearnerStep& step, double lazy_coverage);

}  // namespace kgym
