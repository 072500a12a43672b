// The evaluation service's page (`kgym serve --web`): the queue, the executors and the latest
// answers, read-only. The serve loop writes what it knows into a serve_board (thread-safe);
// the page's threads read it and ask the scheduler themselves.
//
//   GET /             the page (web/page/serve.html), polling:
//   GET /api/serve    ServeView: ServeStatus and the latest answers, newest first (?limit=N)
#pragma once

#include <httplib.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "messages/kgym.pb.h"
#include "web/web_server.hpp"

namespace kgym::web {

class serve_board {
 public:
  explicit serve_board(size_t keep = 200) : keep_(keep) {}
  // The serve loop's counts (every field but `scheduler`), as often as it likes.
  void set_counts(const ServeStatus& counts);
  ServeStatus counts() const;
  // An answer just given (the latest `keep` are kept).
  void answered(const EvalResult& answer, double unix_s);
  std::vector<RecentEvaluation> recent(size_t limit) const;  // newest first

 private:
  mutable std::mutex mutex_;
  size_t keep_;
  ServeStatus counts_;
  std::deque<RecentEvaluation> recent_;  // newest at the front
};

class serve_view {
 public:
  // `scheduler`: the scheduler's status, asked from the page's threads (nullopt: no answer).
  serve_view(web_options options, std::shared_ptr<const serve_board> board,
             std::function<std::optional<SchedulerStatus>()> scheduler);
  ~serve_view();
  serve_view(const serve_view&) = delete;
  serve_view& operator=(const serve_view&) = delete;
  int port() const { return port_; }

 private:
  web_options options_;
  std::shared_ptr<const serve_board> board_;
  std::function<std::optional<SchedulerStatus>()> scheduler_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace kgym::web
