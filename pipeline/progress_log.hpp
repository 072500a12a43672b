// The logger for lines a person watches (run start, one line per iteration, the end):
// "progress" when the command set one up (console and log file), else the default logger.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace kgym {

inline std::shared_ptr<spdlog::logger> progress_log() {
  auto logger = spdlog::get("progress");
  return logger ? logger : spdlog::default_logger();
}

}  // namespace kgym
