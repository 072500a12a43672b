// kgym eval's numbers from the episodes of one evaluation: Fast@1 and Fast@1.2 per turn, for
// the last turn and best of history; correct, hacked and lazy shares; a row per task. Pure.
#pragma once

#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// `lazy_coverage`: a correct turn below this coverage is lazy. Fills every field but the
// run's description (policy, model, device, wall time).
EvalReport eval_report(const std::vector<Episode>& episodes, double lazy_coverage);

// The report as Markdown (a summary table per turn, then one row per task).
std::string eval_markdown(const EvalReport& report);

}  // namespace kgym
