// The evaluation defaults, in one place: KernelBench's tolerances, five trials, and time
// limits per phase that the executor enforces.
#pragma once

#include "messages/kgym.pb.h"

namespace kgym {

// Fills every unset (zero) field of `options` with its default for `device`.
EvalOptions with_defaults(EvalOptions options, Device device);

}  // namespace kgym
