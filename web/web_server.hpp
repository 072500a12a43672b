// The browser view of a training run: a page and its JSON API over HTTP (cpp-httplib),
// read-only. It reads the run directory (run_index) and, while the run trains, the running
// episodes from its monitor (`live`). Every answer carries a Content-Security-Policy that
// allows no inline script: the page renders programs, messages and evidence (untrusted text)
// as text only.
//
//   GET /                      the page (web/page/)
//   GET /api/run               RunView: config, state, latest metrics, the charts to draw
//   GET /api/metrics?since=N   MetricsSeries: iterations from line N on
//   GET /api/episodes?state=running|finished&task=&verdict=&limit=   EpisodeList
//   GET /api/episodes/<id>     Episode: every turn (prompt, answer, verdict, evidence, reward)
//   GET /api/events            server-sent events: "metrics" (MetricsSeries of the new
//                              iterations), "episodes" (EpisodeList: every running episode and
//                              the newly finished), "run" (RunView) as they change
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "messages/kgym.pb.h"
#include "web/run_index.hpp"

namespace kgym::web {

// The running episodes as the run's monitor sees them; nullopt when no monitor answers (the
// run has ended, or was never live).
using live_view = std::function<std::optional<MonitorView>()>;

struct web_options {
  std::string host = "127.0.0.1";
  int port = 0;                  // 0: any free port (port() says which)
  std::string secret;            // required beyond loopback: Bearer, cookie, or ?key= once
  size_t max_event_streams = 16;  // open /api/events at once; more get 503
  double event_interval_s = 1.0;
  std::string asset_dir = "/usr/share/javascript/dygraphs";  // Debian's libjs-dygraphs
};

// GET /lib/dygraph.min.js and /lib/dygraph.min.css from `options.asset_dir` (Debian's
// libjs-dygraphs: served from the machine, no CDN), behind the page's secret; a 404 that says
// what to install where the package is missing. Both pages chart with it.
void serve_chart_library(httplib::Server& server, const web_options& options);

class web_server {
 public:
  // Reads the run (throws std::invalid_argument when `run_dir` holds none), binds (throws
  // std::runtime_error naming the address when it cannot) and serves on threads of its own.
  web_server(const std::string& run_dir, web_options options, live_view live = {});
  ~web_server();
  web_server(const web_server&) = delete;
  web_server& operator=(const web_server&) = delete;
  int port() const { return port_; }

 private:
  // What the monitor said, summarised once per fetch and shared by every call and stream until
  // the next (10,000 running episodes are not re-summarised per browser).
  struct live_state {
    bool live = false;
    int64_t policy_version = 0;
    std::vector<EpisodeSummary> running;
    std::set<std::string> tasks;
    uint64_t version = 0;  // changes whenever the running episodes do
  };
  struct snapshot {
    RunView run;
    std::shared_ptr<const live_state> live;
  };
  snapshot current();  // refreshes the index (under the lock) and the monitor's view
  std::shared_ptr<const live_state> live_now();
  void routes();
  void stream_events(const httplib::Request& req, httplib::Response& res);

  web_options options_;
  live_view live_;
  std::mutex index_mutex_;
  run_index index_;
  std::mutex live_mutex_;
  std::shared_ptr<const live_state> live_cache_ = std::make_shared<live_state>();
  int64_t live_updates_ = -1;  // the last view's MonitorView.updates: a new version only when it differs
  double live_cached_at_ = -1;
  std::atomic<size_t> event_streams_{0};
  std::atomic<bool> stopping_{false};
  std::mutex stop_mutex_;             // with stopped_: event streams wait a tick, or until the server stops
  std::condition_variable stopped_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace kgym::web
