#include "service/eval_service.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <zmq_addon.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "messages/json.hpp"
#include "service/eval_api.hpp"
#include "service/journal_writer.hpp"
#include "service/serve_metrics.hpp"

namespace kgym {

namespace {

// Results come back on CAF threads; only the serving thread touches the socket. An eventfd
// wakes that thread's poll as soon as a result is queued.
struct finished_queue {
  std::mutex mutex;
  std::deque<std::pair<std::string, ExecResult>> items;  // (request_id, result)
  int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ~finished_queue() { ::close(wake_fd); }
  void push(std::string id, ExecResult r) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      items.emplace_back(std::move(id), std::move(r));
    }
    uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }
  std::deque<std::pair<std::string, ExecResult>> take() {
    uint64_t count;
    (void)!::read(wake_fd, &count, sizeof count);
    std::lock_guard<std::mutex> lock(mutex);
    return std::exchange(items, {});
  }
};

// Where the answer to the request in `frames` goes: its ROUTER routing frames (all but the last).
ReplyRoute route_of(const std::vector<zmq::message_t>& frames, bool json) {
  ReplyRoute route;
  for (size_t i = 0; i + 1 < frames.size(); ++i)
    route.add_frames(frames[i].to_string());
  route.set_json(json);
  return route;
}

// Where a ZeroMQ request came from, for the log: the peer's address where the transport
// has one, and the client's routing id (printable, or in hex).
std::string zmq_origin(std::vector<zmq::message_t>& frames) {
  std::string origin = "zmq";
  try {
    origin += std::string(" ") + frames.back().gets("Peer-Address");
  } catch (const zmq::error_t&) {  // ipc:// and inproc:// have no peer address
  }
  if (frames.size() < 2)
    return origin;
  const std::string id = frames.front().to_string().substr(0, 32);
  const bool printable = std::all_of(id.begin(), id.end(), [](unsigned char c) { return c > 32 && c < 127; });
  std::string shown;
  for (unsigned char c : id)
    shown += printable ? std::string(1, char(c)) : fmt::format("{:02x}", c);
  return origin + " id " + shown;
}

// Hands `result` to the client at `route`; false when it cannot take it now (not connected, as
// after a restart of either side, or its queue full): the socket is ROUTER_MANDATORY, and a send
// never blocks the serving thread.
bool reply(zmq::socket_t& socket, const ReplyRoute& route, const EvalResult& result) {
  try {
    for (const auto& frame : route.frames())
      if (!socket.send(zmq::buffer(frame), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
        return false;
    return socket.send(zmq::buffer(encode_eval_result(result, route.json())), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {  // EHOSTUNREACH: no such client connected now
    return false;
  }
}

// Sends each evaluation to the scheduler and queues its answer for the loop: one actor for
// all requests (an actor spawned per request cost serve's thread a spawn and a teardown each).
caf::behavior scheduler_client(caf::event_based_actor* self, std::shared_ptr<finished_queue> finished,
                               scheduler_actor scheduler) {
  return {[=](const ExecRequest& exec_request) {
    self->request(scheduler, caf::infinite, exec_request)
        .then([=](const ExecResult& result) { finished->push(exec_request.request_id(), result); },
              [=](caf::error& error) {
                ExecResult failed;
                failed.set_verdict(INTERNAL_ERROR);
                failed.set_message("the scheduler failed: " + self->system().render(error));
                finished->push(exec_request.request_id(), failed);
              });
  }};
}

class eval_service {
 public:
  eval_service(caf::actor_system& system, const eval_service_setup& setup, const volatile std::sig_atomic_t& stop)
      : system(system), setup(setup), stop(stop), socket(*setup.socket), http(setup.http), suite(*setup.suite),
        journal(setup.journal), requests(setup.table_limits), asking(system),
        to_scheduler(system.spawn(scheduler_client, finished, setup.scheduler)) {}
  ~eval_service() { caf::anon_send_exit(to_scheduler, caf::exit_reason::user_shutdown); }

  // A restart with a journal: answers kept are served from it, the rest evaluated again; then
  // the journal is its writer's (a thread of its own).
  void restore_from_journal() {
    const int forgotten = journal->compact(setup.table_limits.keep);
    size_t kept = 0, again = 0, undelivered = 0;
    const auto now = std::chrono::steady_clock::now();
    for (auto& e : journal->load()) {
      if (e.answer) {
        requests.restore_answer(*e.answer, now);
        ++kept;
        if (e.route && !e.delivered) {
          if (deliver(*e.route, *e.answer))
            journal->delivered(e.request.request_id());
          else
            ++undelivered;  // its client has not reconnected yet
        }
        continue;
      }
      if (!e.request.has_task() && suite.count(e.request.task_id()))
        *e.request.mutable_task() = suite.at(e.request.task_id());
      requests.restore_unfinished(e.request.request_id(), e.route);
      start_evaluation(e.request, "the journal (accepted before a restart)");
      ++again;
    }
    spdlog::info("kgym serve: journal {}: {} answers kept ({} waiting for their ZeroMQ client), {} unfinished "
                 "requests evaluated again, {} answers older than {} s forgotten",
                 journal->path(), kept, undelivered, again, forgotten, setup.table_limits.keep.count());
    writer = std::make_unique<journal_writer>(*journal);
  }

  size_t run() {
    if (journal)
      restore_from_journal();
    // SIGTERM: no new requests; those in flight get drain_timeout to finish, then an error.
    std::optional<std::chrono::steady_clock::time_point> drain_until;
    while (!stop || requests.in_flight() > 0) {
      if (stop && !drain_until) {
        drain_until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(setup.drain_timeout);
        spdlog::info("kgym serve: stopping; {} requests in flight get up to {:.0f} s", requests.in_flight(),
                     setup.drain_timeout.count());
      }
      if (drain_until && std::chrono::steady_clock::now() > *drain_until)
        break;
      auto now = std::chrono::steady_clock::now();
      report_progress(now);
      // Answers are journaled and committed (by the writer's thread) before any client has them,
      // so one a client got is never evaluated again after a crash.
      for (auto& [id, result] : finished->take()) {
        EvalResult answer;
        *answer.mutable_result() = std::move(result);
        answer.set_request_id(id);
        if (!writer) {
          release(std::move(answer), now);
          continue;
        }
        // Over HTTP an answer counts as delivered once kept (its client fetches it).
        const bool delivered = !requests.waits_over_zmq(id);
        writer->answered(std::move(answer), delivered);
      }
      if (writer)
        for (auto& answer : writer->take_committed())
          release(std::move(answer), now);
      for (auto& r : requests.due(now)) {  // answers whose ZeroMQ client could not take them before
        if (!reply(socket, r.route, r.answer)) {
          requests.retry(std::move(r), now);
        } else if (writer) {
          writer->delivered(r.answer.request_id());
        }
      }
      for (const auto& [id, connection] : requests.expired_polls(now))  // long polls out of time: still pending
        http_send(connection, 202, pending_json(id));
      zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                                 {nullptr, finished->wake_fd, ZMQ_POLLIN, 0},
                                 {nullptr, http ? http->wake_fd() : finished->wake_fd, 0, 0},
                                 {nullptr, writer ? writer->wake_fd() : finished->wake_fd, 0, 0}};
      if (http)
        items[2].events = ZMQ_POLLIN;
      if (writer)
        items[3].events = ZMQ_POLLIN;  // answers committed
      const auto wait = std::chrono::milliseconds(requests.waiting_redelivery() ? 100 : 200);
      if (setup.on_counts)  // for the page (--web): what this pass did, before it sleeps
        setup.on_counts(counts_now());
      if (writer)
        writer->flush();  // what this pass gave the journal: one hand-over a pass
      try {
        zmq::poll(items, 4, wait);
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR)
          continue;  // a signal: the loop condition decides
        throw;
      }
      if (writer && (items[3].revents & ZMQ_POLLIN))
        writer->clear_wake();
      if (http && (items[2].revents & ZMQ_POLLIN))
        for (const auto& [call, request] : http->take())
          handle_http(std::to_string(call), request);
      if (!(items[0].revents & ZMQ_POLLIN))
        continue;
      // Every request waiting now (up to 256) in this turn: one poll for a burst, not one each.
      for (int n = 0; n < 256; ++n) {
        std::vector<zmq::message_t> frames;
        if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait))
          break;
        if (frames.size() >= 2)
          handle_zmq(frames);
      }
    }
    size_t unfinished = 0;
    for (const auto& [id, waiting] : requests.unfinished()) {  // past the drain limit: each waiter hears why
      EvalResult answer;
      answer.set_request_id(id);
      answer.set_error("the server stopped before this evaluation finished (its drain limit is " +
                       std::to_string(int(setup.drain_timeout.count())) + " s): send the request again");
      for (const auto& w : waiting.zmq) {
        reply(socket, w.route, answer);
        ++unfinished;
      }
      for (const auto& connection : waiting.http) {
        http_send(connection, 503, to_json(answer));
        ++unfinished;
      }
    }
    socket.close();  // sends what ZeroMQ still holds (linger: 1 s)
    if (writer)
      writer->stop();  // everything posted is committed; the journal is this thread's again
    if (journal)
      journal->settle_deliveries();  // then every answer handed over counts as delivered
    spdlog::info("kgym serve: stopped after {} answers and {} refusals{}", served, refused,
                 unfinished ? "; " + std::to_string(unfinished) + " left unfinished were told so" : "");
    return served;
  }

 private:
  // Every progress_interval while answers flow: how many, how fast, what is in flight.
  static constexpr std::chrono::seconds progress_interval{10};
  std::chrono::steady_clock::time_point progress_at = std::chrono::steady_clock::now();
  size_t progress_served = 0;

  void report_progress(std::chrono::steady_clock::time_point now) {
    if (now - progress_at < progress_interval)
      return;
    const double seconds = std::chrono::duration<double>(now - progress_at).count();
    if (served > progress_served || requests.in_flight() > 0)
      spdlog::info("kgym serve: {} answers in the last {:.0f} s ({:.0f}/s), {} in flight, {} answers and {} refusals "
                   "in all",
                   served - progress_served, seconds, (served - progress_served) / seconds, requests.in_flight(),
                   served, refused);
    progress_at = now;
    progress_served = served;
  }

  // The request table's counts: with the scheduler's queue and executors in /v1/status and
  // /metrics, alone on the board of the page for people (--web).
  ServeStatus counts_now() {
    ServeStatus status;
    status.set_requests_in_flight(static_cast<int64_t>(requests.in_flight()));
    status.set_answers_kept(static_cast<int64_t>(requests.answers_kept()));
    status.set_awaiting_redelivery(static_cast<int64_t>(requests.waiting_redelivery()));
    status.set_answered(static_cast<int64_t>(served));
    status.set_refused(static_cast<int64_t>(refused));
    status.set_uptime_s(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at).count());
    return status;
  }

  ServeStatus status_now() {
    ServeStatus status = counts_now();
    asking->request(setup.scheduler, std::chrono::seconds(2), status_atom::value)
        .receive([&](const SchedulerStatus& s) { *status.mutable_scheduler() = s; },
                 [&](const caf::error& e) { spdlog::warn("kgym serve: no status from the scheduler: {}",
                                                         system.render(e)); });
    return status;
  }

  // Every evaluation is logged, in one line when answered, with where it came from (kept here
  // until then) and where it ran.
  void start_evaluation(const EvalRequest& request, const std::string& origin) {
    spdlog::debug("request {} from {}: task {}", request.request_id(), origin, request.task_id());
    if (spdlog::should_log(spdlog::level::info))  // kept only for the line it will be logged in
      origins[request.request_id()] = origin + ": task " + request.task_id();
    ExecRequest exec_request;
    exec_request.set_request_id(request.request_id());
    *exec_request.mutable_task() = request.task();
    exec_request.mutable_candidate()->set_id(request.request_id());
    exec_request.mutable_candidate()->set_source(request.candidate_source());
    exec_request.set_device(setup.device);
    *exec_request.mutable_options() = request.options();
    exec_request.mutable_options()->set_apply_cpu_sizes(setup.device == CPU && setup.cpu_sizes);
    caf::anon_send(to_scheduler, std::move(exec_request));
  }

  // Called once its evaluation started: the request is the journal's then (what this thread
  // does per request is a move; the comparison with the suite is the writer's). A task of the
  // suite is journaled by its id only; `route`: a ZeroMQ client's, so a restart answers it unasked.
  void journal_accepted(EvalRequest&& request, const ReplyRoute* route) {
    if (!writer)
      return;
    auto in_suite = suite.find(request.task_id());
    writer->accepted(std::move(request), route ? std::optional<ReplyRoute>(*route) : std::nullopt,
                     in_suite == suite.end() ? nullptr : &in_suite->second);
  }

  // An answer for a ZeroMQ client; one it cannot take now is tried again (request_table).
  bool deliver(const ReplyRoute& route, const EvalResult& answer) {
    if (reply(socket, route, answer))
      return true;
    requests.redeliver_later(route, answer, std::chrono::steady_clock::now());
    return false;
  }

  // `connection`: the http_front's id of the call (a string: the request table keeps it).
  void http_send(const std::string& connection, int status, const std::string& body,
                 const std::string& content_type = "application/json") {
    http->answer(std::stoull(connection), {status, body, content_type});
  }

  void http_error(const std::string& connection, int status, const std::string& message) {
    EvalResult error;
    error.set_error(message);
    http_send(connection, status, to_json(error));
  }

  // Withdraws request `id` (DELETE, or an EvalRequest with withdraw set): 202 when the
  // scheduler answered it CANCELLED; else the HTTP status and why not.
  std::pair<int, std::string> withdraw(const std::string& id) {
    if (!requests.known(id))
      return {404, "unknown request id '" + id + "': nothing to withdraw"};
    if (requests.answer_of(id))
      return {409, "request '" + id + "' is answered already: nothing to withdraw"};
    bool withdrawn = false;
    asking->request(setup.scheduler, std::chrono::seconds(2), cancel_atom::value, id)
        .receive([&](bool found) { withdrawn = found; },
                 [&](const caf::error& e) { spdlog::warn("kgym serve: cancel of {}: {}", id, system.render(e)); });
    if (!withdrawn)
      return {409, "request '" + id + "' is no longer waiting to be evaluated: its answer is on its way"};
    spdlog::info("request {} withdrawn by its client", id);
    return {202, ""};
  }

  void handle_http(const std::string& connection, const http_request& r) {
    if (r.path == "/v1/health" && r.method == "GET") {  // for load balancers: no secret, no details
      ServeHealth health;
      health.set_ok(true);
      health.set_executors(status_now().scheduler().executors_size());
      return http_send(connection, 200, to_json(health));
    }
    if (!setup.secret.empty() && r.headers.count("authorization") == 0)
      return http_error(connection, 401, "this server requires a secret: send Authorization: Bearer <secret>");
    if (!setup.secret.empty() && !secrets_equal(r.headers.at("authorization"), "Bearer " + setup.secret))
      return http_error(connection, 401, "wrong secret: the request is refused");
    if (r.path == "/v1/status" && r.method == "GET")
      return http_send(connection, 200, to_json(status_now()));
    if (r.path == "/metrics" && r.method == "GET")
      return http_send(connection, 200, metrics.prometheus_text(status_now()), "text/plain; version=0.0.4");
    const std::string prefix = "/v1/evaluations";
    if (r.path == prefix && r.method == "POST") {
      EvalBatch batch;
      if (!from_json(r.body, &batch).empty()) {
        batch.Clear();
        std::string error = from_json(r.body, batch.add_requests());
        if (!error.empty())
          return http_error(connection, 400, "the body is neither an EvalRequest nor an EvalBatch: " + error);
      }
      EvalSubmitted submitted;
      for (auto& request : *batch.mutable_requests()) {
        request.set_secret(setup.secret);  // the header carried it
        std::string error = stop ? "the server is shutting down: send the request to another server"
                                           : check_eval_request(&request, suite, setup.secret);
        if (!error.empty()) {
          auto* refusal = submitted.add_refused();
          refusal->set_request_id(request.request_id());
          refusal->set_error(error);
          ++refused;
          continue;
        }
        submitted.add_accepted(request.request_id());
        if (requests.submit_http(request.request_id()) != request_table::seen::new_request)
          continue;  // a retry: the first submission answers it
        start_evaluation(request, "http " + r.peer);
        journal_accepted(std::move(request), nullptr);
      }
      if (writer)
        writer->commit_synced();  // on disk before it is acknowledged
      return http_send(connection, 202, to_json(submitted));
    }
    if (r.path.rfind(prefix + "/", 0) == 0 && r.method == "GET") {
      std::string id = r.path.substr(prefix.size() + 1);
      if (!requests.known(id))
        return http_error(connection, 404,
                          "unknown request id '" + id + "': never submitted here, or answered more than " +
                              std::to_string(setup.table_limits.keep.count()) + " s or " +
                              std::to_string(setup.table_limits.max_answers) + " answers ago and forgotten (" +
                              "--journal-keep, --max-answers); submit it with POST " + prefix);
      if (const EvalResult* answer = requests.answer_of(id))
        return http_send(connection, 200, to_json(*answer));
      double wait = r.query.count("wait") ? std::atof(r.query.at("wait").c_str()) : 0.0;
      if (wait > 0)
        return requests.long_poll(id, connection,
                                  std::chrono::steady_clock::now() +
                                      std::chrono::milliseconds(static_cast<int>(1000 * std::min(wait, 600.0))));
      return http_send(connection, 202, pending_json(id));
    }
    if (r.path.rfind(prefix + "/", 0) == 0 && r.method == "DELETE") {  // withdraw (cancel) it
      const std::string id = r.path.substr(prefix.size() + 1);
      const auto [status, why] = withdraw(id);
      if (status != 202)
        return http_error(connection, status, why);
      return http_send(connection, 202, pending_json(id));  // its answer, CANCELLED, follows at once
    }
    if (r.path == prefix || r.path.rfind(prefix + "/", 0) == 0)
      return http_error(connection, 405, "use POST " + prefix + ", GET " + prefix + "/<request_id>[?wait=S] or DELETE " +
                                             prefix + "/<request_id>");
    return http_error(connection, 404, "no such path: the API is POST " + prefix + ", GET " + prefix +
                                           "/<id>, GET /v1/status, GET /v1/health and GET /metrics");
  }

  // One request from a ZeroMQ client: refused with its reason, answered from the table, or evaluated.
  void handle_zmq(std::vector<zmq::message_t>& frames) {
    auto decoded = decode_eval_request(frames.back().to_string(), setup.max_request_bytes);
    const ReplyRoute route = route_of(frames, decoded.json);
    if (decoded.error.empty() && stop)
      decoded.error = "the server is shutting down: send the request to another server";
    if (decoded.error.empty())
      decoded.error = check_eval_request(&decoded.request, suite, setup.secret);
    if (decoded.error.empty() && decoded.request.withdraw()) {  // its answer goes to the request's own client
      decoded.error = withdraw(decoded.request.request_id()).second;
      if (decoded.error.empty())
        return;
    }
    if (!decoded.error.empty()) {
      EvalResult refusal;
      refusal.set_request_id(decoded.request.request_id());
      refusal.set_error(decoded.error);
      reply(socket, route, refusal);
      ++refused;
      spdlog::info("refused request '{}': {}", decoded.request.request_id(), decoded.error);
      return;
    }
    EvalRequest& request = decoded.request;
    switch (requests.submit_zmq(request.request_id(), route)) {
      case request_table::seen::answered: {
        EvalResult answer = *requests.answer_of(request.request_id());
        answer.set_duplicate(true);
        reply(socket, route, answer);
        break;
      }
      case request_table::seen::in_progress:
        break;  // the first one's evaluation will answer this one too
      case request_table::seen::new_request:
        start_evaluation(request, zmq_origin(frames));
        journal_accepted(std::move(request), &route);
        break;
    }
  }

  // An answer now committed: kept, logged, counted, and sent to whoever waits for it.
  void release(EvalResult answer, std::chrono::steady_clock::time_point now) {
    const ExecResult& result = answer.result();
    auto waiting = requests.finish(answer, now);
    auto origin = origins.find(answer.request_id());
    spdlog::info("request {} from {}: {} on {}", answer.request_id(),
                 origin == origins.end() ? "an earlier run (its journal)" : origin->second,
                 Verdict_Name(result.verdict()), result.executor().empty() ? "no executor" : result.executor());
    if (origin != origins.end())
      origins.erase(origin);
    metrics.evaluated(result);
    if (setup.on_answer)
      setup.on_answer(answer);
    bool delivered = true;
    for (auto& w : waiting.zmq) {
      EvalResult copy = answer;
      copy.set_duplicate(w.duplicate);
      delivered &= deliver(w.route, copy);
      ++served;
    }
    for (const auto& connection : waiting.http) {
      http_send(connection, 200, to_json(answer));
      ++served;
    }
    if (writer && !waiting.zmq.empty() && delivered)
      writer->delivered(answer.request_id());
    if (writer && ++answers_since_compaction >= 100000) {
      writer->compact(setup.table_limits.keep);
      answers_since_compaction = 0;
    }
  }

  caf::actor_system& system;
  const eval_service_setup& setup;
  const volatile std::sig_atomic_t& stop;
  zmq::socket_t& socket;
  http_front* http;
  const std::map<std::string, Task>& suite;
  request_journal* journal;
  std::shared_ptr<finished_queue> finished = std::make_shared<finished_queue>();
  request_table requests;
  size_t served = 0, refused = 0, answers_since_compaction = 0;
  std::unordered_map<std::string, std::string> origins;  // request id -> where it came from, until answered
  serve_metrics metrics;
  const std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
  caf::scoped_actor asking;
  std::unique_ptr<journal_writer> writer;
  caf::actor to_scheduler;  // scheduler_client: after `finished`, which it shares
};

}  // namespace

size_t run_eval_service(caf::actor_system& system, const eval_service_setup& setup,
                        const volatile std::sig_atomic_t& stop) {
  return eval_service(system, setup, stop).run();
}

}  // namespace kgym
