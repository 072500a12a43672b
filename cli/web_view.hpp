// The browser view's wiring for the commands that serve it (`kgym web`, `kgym train --web`):
// where to listen, its secret, and the running episodes from a monitor actor.
#pragma once

#include <caf/actor_system.hpp>

#include <memory>
#include <string>

#include "actors/monitor.hpp"
#include "cli/args.hpp"
#include "web/web_server.hpp"

namespace kgym::cli {

// "[HOST:]PORT" (host default 127.0.0.1; port 0: any free one) and the secret from
// $KGYM_WEB_SECRET (or --web-secret-env NAME), required beyond loopback.
web::web_options web_listen_options(const std::string& listen, const args& a);

// The monitor's view as the web view asks for it (actors/monitor's ask_view).
web::live_view monitor_live_view(caf::actor_system& system, monitor_actor monitor);

// Starts the view of the run in `dir` and logs where it is; writes the port to `port_file`
// unless empty.
std::unique_ptr<web::web_server> start_web_view(const std::string& dir, const web::web_options& options,
                                                web::live_view live, const std::string& port_file);

}  // namespace kgym::cli
