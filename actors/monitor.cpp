#include "actors/monitor.hpp"

#include <caf/all.hpp>

#include <deque>
#include <map>

namespace kgym {

namespace {

struct monitor_state {
  std::map<std::string, EpisodeStatus> running;
  std::deque<EpisodeStatus> recent;
  MonitorView totals;
  size_t keep_recent = 50;
  static inline const char* name = "monitor";
};

monitor_actor::behavior_type monitor_impl(monitor_actor::stateful_pointer<monitor_state> self, std::string run_dir,
                                          size_t keep_recent) {
  self->state.totals.set_run_dir(run_dir);
  self->state.keep_recent = keep_recent;
  return {
      [self](const EpisodeStatus& status) {
        auto& s = self->state;
        s.totals.set_updates(s.totals.updates() + 1);
        if (status.stage() != DONE) {
          s.running[status.episode_id()] = status;
          return;
        }
        s.running.erase(status.episode_id());
        s.recent.push_front(status);
        if (s.recent.size() > s.keep_recent)
          s.recent.pop_back();
        s.totals.set_episodes_done(s.totals.episodes_done() + 1);
      },
      [self](const IterationMetrics& metrics) {
        self->state.totals.set_updates(self->state.totals.updates() + 1);
        self->state.totals.set_iteration(metrics.iteration());
        self->state.totals.set_policy_version(metrics.policy_version());
      },
      [self](caf::get_atom) -> MonitorView {
        MonitorView view = self->state.totals;
        for (const auto& [id, status] : self->state.running)
          *view.add_running() = status;
        for (const auto& status : self->state.recent)
          *view.add_recent() = status;
        return view;
      },
  };
}

}  // namespace

monitor_actor spawn_monitor(caf::actor_system& system, std::string run_dir, size_t keep_recent) {
  return system.spawn(monitor_impl, std::move(run_dir), keep_recent);
}

std::optional<MonitorView> ask_view(caf::actor_system& system, const monitor_actor& monitor,
                                    std::chrono::milliseconds timeout) {
  std::optional<MonitorView> view;
  caf::scoped_actor self{system};
  self->request(monitor, timeout, caf::get_atom::value)
      .receive([&](MonitorView& v) { view = std::move(v); }, [](const caf::error&) {});
  return view;
}

}  // namespace kgym
