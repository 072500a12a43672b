// The evaluation defaults: messages/eval_defaults.json (compiled in; the sandbox's Python reads
// the same file), as EvalDefaults, and the rules that are not values (atol and rtol from the
// tolerances, max_timed_s at least min_timed_s).
#pragma once

#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// The schema's names in lower case: "fp16" -> FP16, "dr_kernel" -> DR_KERNEL_TOLERANCES,
// "redrawn" -> PLACEMENT_REDRAWN, "checked" -> PLACEMENT_CHECKED; std::invalid_argument naming the choices otherwise.
Precision precision_named(const std::string& name);
ToleranceSet tolerance_set_named(const std::string& name);
Placement placement_named(const std::string& name);
// Placement's names as written, from the schema ("kept", "redrawn", "checked").
std::vector<std::string> placement_names();
// One of them: PLACEMENT_CHECKED -> "checked".
std::string placement_name(Placement placement);

// messages/eval_defaults.json's text, and parsed (std::logic_error if it does not parse).
const char* eval_defaults_json();
const EvalDefaults& eval_defaults();

// atol and rtol where the options leave them unset.
double default_tolerance(Precision precision, ToleranceSet tolerances);

// Fills every unset (zero) field of `options` with its default for `device`.
EvalOptions with_defaults(EvalOptions options, Device device);

}  // namespace kgym
