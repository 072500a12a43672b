// SIGTERM and SIGINT ask a long-running command (serve, worker) to stop: it notices
// stop_requested, finishes what it must (drains, leaves the cluster) and exits.
#pragma once

#include <csignal>

namespace kgym {

inline volatile std::sig_atomic_t stop_requested = 0;

inline void request_stop(int) { stop_requested = 1; }

inline void stop_on_signals() {
  std::signal(SIGTERM, request_stop);
  std::signal(SIGINT, request_stop);
}

}  // namespace kgym
