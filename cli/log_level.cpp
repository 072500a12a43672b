#include "cli/log_level.hpp"

#include <spdlog/spdlog.h>

namespace kgym::cli {

void declare_log_level(command_line& c) {
  c.one_of("log-level", {"debug", "info", "warn", "error"},
           "what to log (default info: events, a line per evaluation when answered, a progress line\n"
           "every 10 s; debug adds a line at each request's arrival; warn leaves the per-evaluation lines\n"
           "out, for the highest request rates)");
}

void apply_log_level(const args& a) { spdlog::set_level(spdlog::level::from_str(a.get("log-level", "info"))); }

}  // namespace kgym::cli
