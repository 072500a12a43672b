// The evaluation defaults, in one place: the tolerances of a ToleranceSet per precision,
// five trials, and time limits per phase that the executor enforces.
#pragma once

#include <string>

#include "messages/kgym.pb.h"

namespace kgym {

// The schema's names in lower case: "fp16" -> FP16, "dr_kernel" -> DR_KERNEL_TOLERANCES;
// std::invalid_argument naming the choices otherwise.
Precision precision_named(const std::string& name);
ToleranceSet tolerance_set_named(const std::string& name);

// atol and rtol where the options leave them unset.
double default_tolerance(Precision precision, ToleranceSet tolerances);

// Fills every unset (zero) field of `options` with its default for `device`.
EvalOptions with_defaults(EvalOptions options, Device device);

}  // namespace kgym
