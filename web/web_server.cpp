#include "web/web_server.hpp"

#include <chrono>
#include <set>
#include <stdexcept>

#include "messages/json.hpp"
#include "pipeline/file_io.hpp"
#include "report/metric_panels.hpp"
#include "web/episode_query.hpp"
#include "web/http_guard.hpp"

namespace kgym::web {

namespace {

constexpr double live_cache_s = 0.5;  // browsers' polls within it share one monitor request

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string event(const std::string& name, const google::protobuf::Message& data) {
  return "event: " + name + "\ndata: " + to_json(data) + "\n\n";
}

// An "episodes" event: the running episodes and those finished since `sent` (at most
// event_episodes of each: 10,000 running are a count, not a page), `matched` counting all.
EpisodeList episodes_event(const std::vector<EpisodeSummary>& running, const std::vector<EpisodeSummary>& finished,
                           size_t sent) {
  constexpr size_t event_episodes = 200;
  EpisodeList list;
  for (size_t i = 0; i < running.size() && i < event_episodes; ++i)
    *list.add_episodes() = running[i];
  const size_t from = std::min(sent, finished.size());
  for (size_t i = finished.size(); i > from && finished.size() - i < event_episodes; --i)
    *list.add_episodes() = finished[i - 1];  // newest first, as the table
  list.set_matched(static_cast<int64_t>(running.size() + finished.size() - from));
  list.set_finished_stored(static_cast<int64_t>(finished.size()));
  return list;
}

}  // namespace

web_server::web_server(const std::string& run_dir, web_options options, live_view live)
    : options_(std::move(options)), live_(std::move(live)), index_(run_dir) {
  require_secret_beyond_loopback(options_.host, options_.secret, "the run's view");
  // Event streams hold a thread each: room for them beside the page's own calls.
  const size_t threads = options_.max_event_streams + 8;
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  secure_defaults(server_);
  routes();
  port_ = bind_or_throw(server_, options_.host, options_.port, "the run's view");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

web_server::~web_server() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stopped_.notify_all();
  server_.stop();
  if (thread_.joinable())
    thread_.join();
}

std::shared_ptr<const web_server::live_state> web_server::live_now() {
  std::lock_guard<std::mutex> lock(live_mutex_);
  if (!live_ || (live_cached_at_ >= 0 && now_s() - live_cached_at_ <= live_cache_s))
    return live_cache_;
  live_cached_at_ = now_s();
  std::optional<MonitorView> view = live_();
  const int64_t updates = view ? view->updates() : -1;
  if (updates == live_updates_ && live_cache_->live == view.has_value())
    return live_cache_;
  auto next = std::make_shared<live_state>();
  next->version = live_cache_->version + 1;
  if (view) {
    next->live = true;
    next->policy_version = view->policy_version();
    for (const auto& status : view->running()) {
      next->running.push_back(summarize(status));
      next->tasks.insert(status.task_id());
    }
  }
  live_updates_ = updates;
  live_cache_ = next;
  return live_cache_;
}

web_server::snapshot web_server::current() {
  snapshot s;
  s.live = live_now();
  std::set<std::string> tasks = s.live->tasks;
  {
    std::lock_guard<std::mutex> lock(index_mutex_);
    index_.refresh();
    s.run.set_run_dir(index_.dir());
    *s.run.mutable_config() = index_.config();
    s.run.set_iterations(static_cast<int64_t>(index_.metrics().size()));
    if (!index_.metrics().empty())
      *s.run.mutable_latest() = index_.metrics().back();
    s.run.set_episodes_finished(static_cast<int64_t>(index_.finished().size()));
    s.run.set_policy_version(s.run.latest().policy_version());
    tasks.insert(index_.tasks().begin(), index_.tasks().end());
  }
  if (s.live->live) {
    s.run.set_live(true);
    s.run.set_policy_version(s.live->policy_version);
  }
  for (const auto& task : tasks)
    s.run.add_tasks(task);
  const auto* verdicts = Verdict_descriptor();
  for (int i = 0; i < verdicts->value_count(); ++i)
    if (verdicts->value(i)->number() != VERDICT_UNSPECIFIED)
      s.run.add_verdicts(verdicts->value(i)->name());
  s.run.set_episodes_running(static_cast<int32_t>(s.live->running.size()));
  for (const auto& panel : metric_panels())
    *s.run.add_panels() = panel;
  return s;
}

void serve_chart_library(httplib::Server& server, const web_options& options) {
  for (const auto& [name, type] : {std::pair<std::string, std::string>{"dygraph.min.js", "text/javascript"},
                                   {"dygraph.min.css", "text/css"}}) {
    std::string body;
    try {
      body = read_file(options.asset_dir + "/" + name);
    } catch (const std::runtime_error&) {
      // not installed: each request for it hears what to install
    }
    std::string missing = options.asset_dir + "/" + name + " is missing: install Debian's libjs-dygraphs";
    auto serve = [body, type = type, missing](const httplib::Request&, httplib::Response& res) {
      if (body.empty())
        send_error(res, 404, missing);
      else
        res.set_content(body, type.c_str());
    };
    server.Get("/lib/" + name, guarded(options.secret, serve));
  }
}

void web_server::routes() {
  serve_pages(server_, options_.secret, {"/index.html", "/app.js", "/style.css"}, "/index.html");
  serve_chart_library(server_, options_);
  server_.Get("/api/run", guarded(options_.secret, [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, current().run);
  }));
  server_.Get("/api/metrics", guarded(options_.secret, [this](const httplib::Request& req, httplib::Response& res) {
    std::string since_text = req.get_param_value("since");
    int64_t since = 0;
    if (!since_text.empty()) {
      try {
        since = std::stoll(since_text);
      } catch (const std::exception&) {
        since = -1;
      }
      if (since < 0)
        return send_error(res, 400, "since must be a line number (0 or more)");
    }
    MetricsSeries series;
    series.set_since(since);
    std::lock_guard<std::mutex> lock(index_mutex_);
    index_.refresh();
    for (size_t i = static_cast<size_t>(since); i < index_.metrics().size(); ++i)
      *series.add_iterations() = index_.metrics()[i];
    send_json(res, series);
  }));
  server_.Get("/api/episodes", guarded(options_.secret, [this](const httplib::Request& req, httplib::Response& res) {
    std::map<std::string, std::string> query(req.params.begin(), req.params.end());
    query.erase("key");
    std::string error;
    auto filter = parse_filter(query, &error);
    if (!filter)
      return send_error(res, 400, error);
    auto live = live_now();  // the table needs the running episodes, not the whole RunView
    std::lock_guard<std::mutex> lock(index_mutex_);
    index_.refresh();
    send_json(res, select(live->running, index_.finished(), *filter));
  }));
  server_.Get(R"(/api/episodes/(.+))",
              guarded(options_.secret, [this](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    std::optional<Episode> episode;
    {
      std::lock_guard<std::mutex> lock(index_mutex_);
      index_.refresh();
      episode = index_.episode(id);
    }
    if (!episode)
      return send_error(res, 404, "no finished episode '" + id + "' in this run (a running one is listed by "
                                  "/api/episodes?state=running; its turns are stored when it finishes)");
    send_json(res, *episode);
  }));
  server_.Get("/api/events", guarded(options_.secret, [this](const httplib::Request& req, httplib::Response& res) {
    stream_events(req, res);
  }));
}

void web_server::stream_events(const httplib::Request&, httplib::Response& res) {
  if (event_streams_.fetch_add(1) >= options_.max_event_streams) {
    event_streams_.fetch_sub(1);
    return send_error(res, 503, "too many open event streams (" + std::to_string(options_.max_event_streams) +
                                "): close a tab, or poll /api/run and /api/episodes");
  }
  struct cursor {
    size_t metrics = 0, finished = 0;
    uint64_t live_version = ~uint64_t{0};
    std::string run;
    bool first = true;
  };
  auto at = std::make_shared<cursor>();
  res.set_header("Cache-Control", "no-store");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, at](size_t, httplib::DataSink& sink) {
        if (!at->first) {  // one tick between updates; woken at once when the server stops
          std::unique_lock<std::mutex> lock(stop_mutex_);
          stopped_.wait_for(lock, std::chrono::duration<double>(options_.event_interval_s), [this] { return stopping_.load(); });
        }
        if (stopping_)
          return false;
        snapshot s = current();
        std::string out;
        {
          std::lock_guard<std::mutex> lock(index_mutex_);
          if (index_.metrics().size() < at->metrics)
            at->metrics = 0;  // a resumed run rewrote its metrics: send them again
          if (index_.metrics().size() > at->metrics) {
            MetricsSeries series;
            series.set_since(static_cast<int64_t>(at->metrics));
            for (size_t i = at->metrics; i < index_.metrics().size(); ++i)
              *series.add_iterations() = index_.metrics()[i];
            at->metrics = index_.metrics().size();
            out += event("metrics", series);
          }
          if (index_.finished().size() != at->finished || s.live->version != at->live_version) {
            out += event("episodes", episodes_event(s.live->running, index_.finished(), at->finished));
            at->finished = index_.finished().size();
            at->live_version = s.live->version;
          }
        }
        std::string run = to_json(s.run);
        if (run != at->run) {
          at->run = run;
          out += event("run", s.run);
        }
        if (at->first)
          out = "retry: 2000\n\n" + out;
        at->first = false;
        if (out.empty())
          out = ": tick\n\n";  // a comment: finds a closed connection, keeps proxies from timing out
        return sink.write(out.data(), out.size());
      },
      [this](bool) { event_streams_.fetch_sub(1); });
}

}  // namespace kgym::web
