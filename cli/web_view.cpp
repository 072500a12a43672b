// kgym web: the browser view of a training run, live while it trains (through the run's
// monitor, as kgym top reaches it), from its files once it has ended.
#include "cli/web_view.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/stop_signal.hpp"
#include "messages/caf_types.hpp"
#include "pipeline/progress_log.hpp"
#include "pipeline/run_dir.hpp"
#include "pipeline/actor_system_setup.hpp"

namespace kgym::cli {

namespace {

command_line web_command_line() {
  command_line c("web", "DIR [--listen [HOST:]PORT] [--port-file FILE] [--web-secret-env NAME]",
                 "Serves the run in DIR to a browser: its metric curves (those kgym report draws), the\n"
                 "episodes in flight and the finished ones (filter by state, task, last verdict), and any\n"
                 "episode turn by turn (the prompt with its context, the program, verdict, evidence and\n"
                 "reward). Live while the run trains (through its monitor, like kgym top), from its files\n"
                 "once it has ended. Read-only. Ctrl-C stops it.\n");
  c.positional("DIR", "the run directory", true)
      .text("listen", "[HOST:]PORT", "where to serve (default 127.0.0.1:8090; port 0: any free one)")
      .text("port-file", "FILE", "write the port there once listening")
      .text("web-secret-env", "NAME",
            "the secret's environment variable (default KGYM_WEB_SECRET); any\n"
            "HOST other than loopback needs one: open the page once with\n"
            "?key=<secret> (the browser then keeps it as a cookie), or send\n"
            "Authorization: Bearer <secret>")
      .config_file()
      .footer("The same view comes with kgym train --web [HOST:]PORT. Its JSON API (for scripts): GET\n"
              "/api/run, /api/metrics?since=N, /api/episodes?state=&task=&verdict=&limit=,\n"
              "/api/episodes/<id>, /api/events (server-sent events); README, \"Watching a run\".\n");
  return c;
}

}  // namespace

web::web_options web_listen_options(const std::string& listen, const args& a) {
  web::web_options options;
  std::string port_text = listen;
  if (auto colon = listen.rfind(':'); colon != std::string::npos) {
    options.host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
    if (options.host.size() > 2 && options.host.front() == '[' && options.host.back() == ']')
      options.host = options.host.substr(1, options.host.size() - 2);
  }
  bool digits = !port_text.empty() && port_text.size() <= 5 &&
                port_text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port_text) > 65535 || options.host.empty())
    throw std::invalid_argument("'" + listen + "' is no [HOST:]PORT (e.g. 8090, 127.0.0.1:8090, 0.0.0.0:8090)");
  options.port = std::stoi(port_text);
  std::string secret_env = a.get("web-secret-env", "KGYM_WEB_SECRET");
  if (const char* secret = std::getenv(secret_env.c_str()))
    options.secret = secret;
  if (a.has("web-secret-env") && options.secret.empty())
    throw std::invalid_argument("--web-secret-env " + secret_env + ": that variable is not set");
  return options;
}

web::live_view monitor_live_view(caf::actor_system& system, monitor_actor monitor) {
  return [&system, monitor] { return ask_view(system, monitor); };
}

std::unique_ptr<web::web_server> start_web_view(const std::string& dir, const web::web_options& options,
                                                web::live_view live, const std::string& port_file) {
  auto server = std::make_unique<web::web_server>(dir, options, std::move(live));
  if (!port_file.empty())
    std::ofstream(port_file) << server->port() << "\n";
  progress_log()->info("the run's view: http://{}:{}/{}", options.host.find(':') == std::string::npos ? options.host
                                                                                                : "[" + options.host + "]",
               server->port(), options.secret.empty() ? "" : "?key=<secret>");
  return server;
}

int run_web(const std::vector<std::string>& argv) {
  auto parsed = web_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  const std::string dir = a.positional().front();
  auto options = web_listen_options(a.get("listen", "127.0.0.1:8090"), a);

  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  configure_actor_system(cfg);
  caf::actor_system system{cfg};
  // The run's monitor, found through its port file whenever none is connected: the run may
  // start, end or be resumed (a new port) while the view is open.
  struct remote_monitor {
    std::mutex mutex;
    std::optional<monitor_actor> actor;
  };
  auto remote = std::make_shared<remote_monitor>();
  web::live_view live = [&system, dir, remote]() -> std::optional<MonitorView> {
    std::lock_guard<std::mutex> lock(remote->mutex);
    if (!remote->actor) {
      uint16_t port = 0;
      if (!(std::ifstream(run_dir::monitor_port_path(dir)) >> port))
        return std::nullopt;
      auto found = system.middleman().remote_actor<monitor_actor>("127.0.0.1", port);
      if (!found)
        return std::nullopt;
      remote->actor = *found;
    }
    auto view = ask_view(system, *remote->actor);
    if (!view)
      remote->actor.reset();
    return view;
  };
  auto server = start_web_view(dir, options, live, a.get("port-file"));
  std::cout << "kgym web: serving " << dir << " on http://" << options.host << ":" << server->port()
            << "/ (Ctrl-C stops)" << std::endl;
  stop_on_signals();
  while (!stop_requested)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return 0;
}

}  // namespace kgym::cli
