#include "web/serve_view.hpp"

#include <algorithm>

#include "web/http_guard.hpp"

namespace kgym::web {

void serve_board::set_counts(const ServeStatus& counts) {
  std::lock_guard<std::mutex> lock(mutex_);
  counts_ = counts;
  counts_.clear_scheduler();
}

ServeStatus serve_board::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void serve_board::answered(const EvalResult& answer, double unix_s) {
  RecentEvaluation r;
  r.set_request_id(answer.request_id());
  r.set_task_id(answer.result().task_id());
  r.set_verdict(answer.result().verdict());
  r.set_speedup(answer.result().speedup());
  r.set_message(answer.error().empty() ? answer.result().message() : answer.error());
  r.set_executor(answer.result().executor());
  r.set_wall_s(answer.result().wall_s());
  r.set_from_cache(answer.result().from_cache());
  r.set_answered_unix_s(unix_s);
  std::lock_guard<std::mutex> lock(mutex_);
  recent_.push_front(std::move(r));
  while (recent_.size() > keep_)
    recent_.pop_back();
}

std::vector<RecentEvaluation> serve_board::recent(size_t limit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {recent_.begin(), recent_.begin() + static_cast<long>(std::min(limit, recent_.size()))};
}

serve_view::serve_view(web_options options, std::shared_ptr<const serve_board> board,
                       std::function<std::optional<SchedulerStatus>()> scheduler)
    : options_(std::move(options)), board_(std::move(board)), scheduler_(std::move(scheduler)) {
  require_secret_beyond_loopback(options_.host, options_.secret, "the service's page");
  server_.new_task_queue = [] { return new httplib::ThreadPool(8); };
  secure_defaults(server_);
  serve_pages(server_, options_.secret, {"/serve.html", "/serve.js", "/style.css"}, "/serve.html");
  serve_chart_library(server_, options_);
  server_.Get("/api/serve", guarded(options_.secret, [this](const httplib::Request& req, httplib::Response& res) {
    size_t limit = 50;
    if (req.has_param("limit")) {
      const std::string text = req.get_param_value("limit");
      bool digits = !text.empty() && text.size() <= 4 && text.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoul(text) == 0 || std::stoul(text) > 1000)
        return send_error(res, 400, "limit must be a number from 1 to 1000");
      limit = std::stoul(text);
    }
    ServeView view;
    *view.mutable_status() = board_->counts();
    if (auto s = scheduler_ ? scheduler_() : std::nullopt)
      *view.mutable_status()->mutable_scheduler() = *s;
    for (auto& r : board_->recent(limit))
      *view.add_recent() = std::move(r);
    send_json(res, view);
  }));
  port_ = bind_or_throw(server_, options_.host, options_.port, "the service's page");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

serve_view::~serve_view() {
  server_.stop();
  if (thread_.joinable())
    thread_.join();
}

}  // namespace kgym::web
