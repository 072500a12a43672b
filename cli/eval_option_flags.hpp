// --option NAME=VALUE (repeatable): any EvalOptions field (messages/kgym.proto) by its name,
// for the commands that evaluate: kgym check sets each evaluation's, kgym serve what a
// request's own options leave unset.
#pragma once

#include <string>

#include "cli/command_line.hpp"
#include "messages/kgym.pb.h"

namespace kgym::cli {

// Declares --option on `c`, its help ending with `applies` (what the options are for there).
void declare_eval_option_flags(command_line& c, const std::string& applies);

// Sets each --option of `a` in `options`; std::invalid_argument naming the setting and what
// is wrong with it.
void apply_eval_option_flags(const args& a, EvalOptions* options);

}  // namespace kgym::cli
