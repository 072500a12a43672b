#include "cli/eval_option_flags.hpp"

#include <stdexcept>

#include "messages/json.hpp"

namespace kgym::cli {

void declare_eval_option_flags(command_line& c, const std::string& applies) {
  c.repeated("option", "NAME=VALUE",
             "an EvalOptions field by name (messages/kgym.proto), e.g. min_timed_s=0.25,\n"
             "batch_memory_mb=16384 (VALUE as JSON, else as text)" + applies);
}

void apply_eval_option_flags(const args& a, EvalOptions* options) {
  for (const auto& setting : a.all("option"))
    if (std::string error = set_field(setting, options); !error.empty())
      throw std::invalid_argument("--option " + setting + ": " + error + " (the fields are EvalOptions' in messages/kgym.proto)");
}

}  // namespace kgym::cli
