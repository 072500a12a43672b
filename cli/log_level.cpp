#include "cli/log_level.hpp"

#include <spdlog/spdlog.h>

namespace kgym::cli {

void declare_log_level(command_line& c) {
  c.one_of("log-level", {"debug", "info", "warn", "error"},
           "what to log (default info: events and a progress line every 10 s; debug adds a line for\n"
           "each request's arrival and answer)");
}

void apply_log_level(const args& a) { spdlog::set_level(spdlog::level::from_str(a.get("log-level", "info"))); }

}  // namespace kgym::cli
