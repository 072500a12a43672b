// kgym top: a live view of a running `kgym train`, from its monitor actor (CAF middleman,
// loopback; the port is in the run directory).
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "messages/enum_names.hpp"
#include "actors/monitor.hpp"
#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "pipeline/run_dir.hpp"
#include "pipeline/actor_system_setup.hpp"

namespace kgym::cli {

namespace {

command_line top_command_line() {
  command_line c("top", "DIR [--once] [--interval S] [--rows N]",
                 "Shows the episodes of the run in DIR as they run: per episode its task, turn, stage, last\n"
                 "verdict, program and reward; then the latest finished ones. Refreshes every S seconds\n"
                 "(default 1) until the run ends or Ctrl-C; --once prints one view and exits.\n");
  c.positional("DIR", "the running run's directory", true)
      .flag("once", "print one view and exit")
      .number("interval", "S", "seconds between views (default 1)")
      .whole("rows", "N", "episodes in flight shown at most (default 30; half as many finished)");
  return c;
}

void print_view(const MonitorView& v, size_t rows) {
  std::printf("run %s  iteration %lld  policy v%lld  episodes done %lld  running %d\n", v.run_dir().c_str(),
              static_cast<long long>(v.iteration() + 1), static_cast<long long>(v.policy_version()),
              static_cast<long long>(v.episodes_done()), v.running_size());
  std::printf("%-36s %-5s %-10s %-14s %-14s %7s %8s\n", "episode", "turn", "stage", "last verdict", "program", "reward",
              "elapsed");
  auto row = [](const EpisodeStatus& s) {
    std::printf("%-36s %2d/%-2d %-10s %-14s %-14s %7.3f %7.1fs\n", s.episode_id().c_str(), s.turn(), s.turns(),
                lower_name(s.stage()).c_str(), s.turn() ? Verdict_Name(s.last_verdict()).c_str() : "-",
                s.last_action().empty() ? "-" : s.last_action().c_str(), s.last_reward(), s.elapsed_s());
  };
  for (int i = 0; i < v.running_size() && static_cast<size_t>(i) < rows; ++i)
    row(v.running(i));
  if (v.recent_size() > 0)
    std::printf("-- finished, newest first --\n");
  for (int i = 0; i < v.recent_size() && static_cast<size_t>(i) < rows / 2; ++i)
    row(v.recent(i));
  std::fflush(stdout);
}

}  // namespace

int run_top(const std::vector<std::string>& argv) {
  auto parsed = top_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  std::string dir = a.positional().front();
  uint16_t port = 0;
  if (!(std::ifstream(run_dir::monitor_port_path(dir)) >> port))
    throw std::invalid_argument("no running kgym train in " + dir + " (" + run_dir::monitor_port_path(dir) +
                                " is missing: the run has ended, or has not started)");
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  configure_actor_system(cfg);
  caf::actor_system system{cfg};
  auto monitor = system.middleman().remote_actor<monitor_actor>("127.0.0.1", port);
  if (!monitor)
    throw std::runtime_error("cannot reach the run's monitor on 127.0.0.1:" + std::to_string(port) + ": " +
                             system.render(monitor.error()));
  caf::scoped_actor self{system};
  auto interval = std::chrono::milliseconds(static_cast<int>(1000 * a.number("interval", 1.0)));
  size_t rows = static_cast<size_t>(a.whole("rows", 30));
  while (true) {
    bool alive = true;
    self->request(*monitor, std::chrono::seconds(5), caf::get_atom::value)
        .receive(
            [&](const MonitorView& view) {
              if (!a.has("once"))
                std::printf("\033[H\033[2J");
              print_view(view, rows);
            },
            [&](const caf::error& error) {
              std::cerr << "kgym top: the run's monitor is gone (" << system.render(error) << ")\n";
              alive = false;
            });
    if (!alive)
      return 1;
    if (a.has("once"))
      return 0;
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace kgym::cli
