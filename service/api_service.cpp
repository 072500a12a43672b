#include "service/api_service.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>

#include "messages/json.hpp"
#include "service/eval_api.hpp"
#include "service/free_memory.hpp"
#include "service/journal_writer.hpp"
#include "service/serve_metrics.hpp"

namespace kgym {

namespace {

// Times in the request table are the actor clock's (the steady clock, or the test coordinator's).
using clock_type = std::chrono::steady_clock;

struct api_service_state {
  api_service_config config;
  request_table requests{request_table::limits{}};
  serve_metrics metrics;
  std::unordered_map<std::string, std::string> origins;  // request id -> where it came from, until answered
  std::unique_ptr<journal_writer> writer;
  size_t served = 0, refused = 0, answers_since_compaction = 0;
  bool draining = false;
  size_t answers_to_flush = 0;    // answers the writer has gathered, not handed over (clients wait)
  int64_t committed_at_once = 0, committed_by_writer = 0;  // answers, since start (ServeStatus)
  bool others_to_flush = false;   // accepted requests, delivery marks
  // When the first flush_atom on its way from the clock comes (max: none is).
  clock_type::time_point flush_due = clock_type::time_point::max();
  bool flush_queued = false;      // a flush_atom waits behind the mailbox's messages
  clock_type::time_point started_at = clock_type::now();
  clock_type::time_point progress_at;  // set at the start
  size_t progress_served = 0;
  static inline const char* name = "api_service";
};

using self_ptr = api_service_actor::stateful_pointer<api_service_state>;

// Answers this actor gave the journal's writer reach it within this while the writer is busy
// (flush_when_idle); accepted requests and delivery marks alone within half the journal's batch
// window, so that the next answer's commit here usually takes them along: handed over after a
// millisecond, each request's record kept the writer busy when its answer came (the slow way
// out, through the writer's thread), and the clock's thread woke twice a millisecond.
constexpr std::chrono::milliseconds flush_every{1};

void flush_when_idle(self_ptr self);

// Every progress_interval while answers flow: how many, how fast, what is in flight.
constexpr std::chrono::seconds progress_interval{10};

int64_t steady_ns(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void http_send(self_ptr self, uint64_t call, int status, std::string body,
               std::string content_type = "application/json") {
  api_delivery d;
  d.http = true;
  d.call = call;
  d.status = status;
  d.body = std::move(body);
  d.content_type = std::move(content_type);
  self->state.config.outbox->push(std::move(d));
}

void http_error(self_ptr self, uint64_t call, int status, const std::string& message) {
  EvalResult error;
  error.set_error(message);
  http_send(self, call, status, to_json(error));
}

// A reply to a ZeroMQ client; `redeliver`: an answer, tried again if its client cannot take it now.
void zmq_send(self_ptr self, const ReplyRoute& route, EvalResult answer, bool redeliver = false,
              int64_t retry_until_ns = 0) {
  api_delivery d;
  d.route = route;
  d.answer = std::move(answer);
  d.redeliver = redeliver;
  d.journaled = redeliver && self->state.writer != nullptr;
  d.retry_until_ns = retry_until_ns;
  self->state.config.outbox->push(std::move(d));
}

// The request table's counts: with the scheduler's queue and executors in /v1/status and
// /metrics, alone on the board of the page for people (--web).
ServeStatus counts_now(self_ptr self) {
  auto& st = self->state;
  ServeStatus status;
  status.set_requests_in_flight(static_cast<int64_t>(st.requests.in_flight()));
  status.set_answers_kept(static_cast<int64_t>(st.requests.answers_kept()));
  status.set_awaiting_redelivery(static_cast<int64_t>(st.requests.waiting_redelivery()));
  status.set_answered(static_cast<int64_t>(st.served));
  status.set_refused(static_cast<int64_t>(st.refused));
  status.set_answers_committed_at_once(st.committed_at_once);
  status.set_answers_committed_by_writer(st.committed_by_writer);
  status.set_uptime_s(std::chrono::duration<double>(clock_type::now() - st.started_at).count());
  return status;
}

// `then` with the counts and the scheduler's part (without it if the scheduler does not answer).
template <class Then>
void with_status(self_ptr self, Then then) {
  self->request(self->state.config.scheduler, std::chrono::seconds(2), status_atom::value)
      .then(
          [self, then](const SchedulerStatus& s) mutable {
            ServeStatus status = counts_now(self);
            *status.mutable_scheduler() = s;
            then(status);
          },
          [self, then](const caf::error& e) mutable {
            spdlog::warn("kgym serve: no status from the scheduler: {}", self->system().render(e));
            then(counts_now(self));
          });
}

// An answer now committed: kept, logged, counted, and sent to whoever waits for it.
void release(self_ptr self, EvalResult answer) {
  auto& st = self->state;
  const ExecResult& result = answer.result();
  auto waiting = st.requests.finish(answer, self->clock().now());
  auto origin = st.origins.find(answer.request_id());
  spdlog::info("request {} from {}: {} on {}", answer.request_id(),
               origin == st.origins.end() ? "an earlier run (its journal)" : origin->second,
               Verdict_Name(result.verdict()), result.executor().empty() ? "no executor" : result.executor());
  if (origin != st.origins.end())
    st.origins.erase(origin);
  st.metrics.evaluated(result);
  if (st.config.on_answer)
    st.config.on_answer(answer);
  for (auto& w : waiting.zmq) {
    EvalResult copy = answer;
    copy.set_duplicate(w.duplicate);
    zmq_send(self, w.route, std::move(copy), true);
    ++st.served;
  }
  for (const auto& connection : waiting.http) {
    http_send(self, std::stoull(connection), 200, to_json(answer));
    ++st.served;
  }
  if (st.writer && ++st.answers_since_compaction >= 100000) {
    st.writer->compact(st.config.table_limits.keep);
    st.answers_since_compaction = 0;
    st.others_to_flush = true;
  }
}

// The scheduler's answer: journaled and committed (by the writer's thread) before any client
// has it, so one a client got is never evaluated again after a crash.
void answered(self_ptr self, const std::string& id, ExecResult result) {
  EvalResult answer;
  *answer.mutable_result() = std::move(result);
  answer.set_request_id(id);
  if (!self->state.writer)
    return release(self, std::move(answer));
  // Over HTTP an answer counts as delivered once kept (its client fetches it).
  const bool delivered = !self->state.requests.waits_over_zmq(id);
  self->state.writer->answered(std::move(answer), delivered);
  ++self->state.answers_to_flush;
}

// Every evaluation is logged, in one line when answered, with where it came from (kept here
// until then) and where it ran.
void start_evaluation(self_ptr self, const EvalRequest& request, const std::string& origin) {
  const auto& config = self->state.config;
  spdlog::debug("request {} from {}: task {}", request.request_id(), origin, request.task_id());
  if (spdlog::should_log(spdlog::level::info))  // kept only for the line it will be logged in
    self->state.origins[request.request_id()] = origin + ": task " + request.task_id();
  ExecRequest exec_request;
  exec_request.set_request_id(request.request_id());
  *exec_request.mutable_task() = request.task();
  exec_request.mutable_candidate()->set_id(request.request_id());
  exec_request.mutable_candidate()->set_source(request.candidate_source());
  exec_request.set_device(config.device);
  *exec_request.mutable_options() = config.default_options;
  exec_request.mutable_options()->MergeFrom(request.options());  // the request's own settings win
  exec_request.mutable_options()->set_apply_cpu_sizes(config.device == CPU && config.cpu_sizes);
  const std::string id = request.request_id();
  self->request(config.scheduler, caf::infinite, std::move(exec_request))
      .then(
          [self, id](ExecResult& result) {
            answered(self, id, std::move(result));
            flush_when_idle(self);
          },
          [self, id](caf::error& error) {
            ExecResult failed;
            failed.set_verdict(INTERNAL_ERROR);
            failed.set_message("the scheduler failed: " + self->system().render(error));
            answered(self, id, std::move(failed));
            flush_when_idle(self);
          });
}

// Called once its evaluation started: the request is the journal's then. `by_task_id`: it named a
// task of the suite (sent none of its own), which is journaled by its id only; `route`: a ZeroMQ
// client's, so a restart answers it unasked.
void journal_accepted(self_ptr self, EvalRequest&& request, bool by_task_id, const ReplyRoute* route) {
  auto& st = self->state;
  if (!st.writer)
    return;
  st.writer->accepted(std::move(request), route ? std::optional<ReplyRoute>(*route) : std::nullopt, by_task_id);
  st.others_to_flush = true;
}

// Withdraws request `id` (DELETE, or an EvalRequest with withdraw set); `then(status, why)`:
// 202 once the scheduler answered it CANCELLED, else the HTTP status and why not.
template <class Then>
void withdraw(self_ptr self, const std::string& id, Then then) {
  auto& requests = self->state.requests;
  if (!requests.known(id))
    return then(404, "unknown request id '" + id + "': nothing to withdraw");
  if (requests.answer_of(id))
    return then(409, "request '" + id + "' is answered already: nothing to withdraw");
  self->request(self->state.config.scheduler, std::chrono::seconds(2), cancel_atom::value, id)
      .then(
          [id, then](bool found) {
            if (!found)
              return then(409, "request '" + id + "' is no longer waiting to be evaluated: its answer is on its way");
            spdlog::info("request {} withdrawn by its client", id);
            then(202, "");
          },
          [self, id, then](const caf::error& e) {
            spdlog::warn("kgym serve: cancel of {}: {}", id, self->system().render(e));
            then(409, "request '" + id + "' is no longer waiting to be evaluated: its answer is on its way");
          });
}

void refuse(self_ptr self, const ReplyRoute& route, const std::string& id, const std::string& why) {
  EvalResult refusal;
  refusal.set_request_id(id);
  refusal.set_error(why);
  zmq_send(self, route, std::move(refusal));
  ++self->state.refused;
  spdlog::info("refused request '{}': {}", id, why);
}

// One request from a ZeroMQ client: refused with its reason, answered from the table, or evaluated.
void submit(self_ptr self, EvalRequest& request, const ReplyRoute& route, const std::string& origin,
            std::string error) {
  auto& st = self->state;
  if (error.empty() && st.draining)
    error = "the server is shutting down: send the request to another server";
  bool by_task_id = false;
  if (error.empty())
    error = check_eval_request(&request, *st.config.suite, st.config.secret, &by_task_id);
  if (!error.empty())
    return refuse(self, route, request.request_id(), error);
  if (request.withdraw()) {  // its answer goes to the request's own client
    const std::string id = request.request_id();
    return withdraw(self, id, [self, route, id](int status, const std::string& why) {
      if (status != 202)
        refuse(self, route, id, why);
    });
  }
  switch (st.requests.submit_zmq(request.request_id(), route)) {
    case request_table::seen::answered: {
      EvalResult answer = *st.requests.answer_of(request.request_id());
      answer.set_duplicate(true);
      zmq_send(self, route, std::move(answer));
      break;
    }
    case request_table::seen::in_progress:
      break;  // the first one's evaluation will answer this one too
    case request_table::seen::new_request:
      start_evaluation(self, request, origin);
      journal_accepted(self, std::move(request), by_task_id, &route);
      break;
  }
}

void post_evaluations(self_ptr self, const HttpCall& call) {
  auto& st = self->state;
  EvalBatch batch;
  if (!from_json(call.body(), &batch).empty()) {
    batch.Clear();
    std::string error = from_json(call.body(), batch.add_requests());
    if (!error.empty())
      return http_error(self, call.id(), 400, "the body is neither an EvalRequest nor an EvalBatch: " + error);
  }
  EvalSubmitted submitted;
  for (auto& request : *batch.mutable_requests()) {
    request.set_secret(st.config.secret);  // the header carried it
    bool by_task_id = false;
    std::string error = st.draining ? "the server is shutting down: send the request to another server"
                                    : check_eval_request(&request, *st.config.suite, st.config.secret, &by_task_id);
    if (!error.empty()) {
      auto* refusal = submitted.add_refused();
      refusal->set_request_id(request.request_id());
      refusal->set_error(error);
      ++st.refused;
      continue;
    }
    submitted.add_accepted(request.request_id());
    if (st.requests.submit_http(request.request_id()) != request_table::seen::new_request)
      continue;  // a retry: the first submission answers it
    start_evaluation(self, request, "http " + call.peer());
    journal_accepted(self, std::move(request), by_task_id, nullptr);
  }
  if (st.writer)
    st.writer->commit_synced();  // on disk before it is acknowledged
  http_send(self, call.id(), 202, to_json(submitted));
}

void handle_http(self_ptr self, const HttpCall& call) {
  auto& st = self->state;
  const uint64_t id = call.id();
  if (call.path() == "/v1/health" && call.method() == "GET")  // for load balancers: no secret, no details
    return with_status(self, [self, id](const ServeStatus& status) {
      ServeHealth health;
      health.set_ok(true);
      health.set_executors(status.scheduler().executors_size());
      http_send(self, id, 200, to_json(health));
    });
  const auto& headers = call.headers();
  const std::string& secret = st.config.secret;
  if (!secret.empty() && headers.count("authorization") == 0)
    return http_error(self, id, 401, "this server requires a secret: send Authorization: Bearer <secret>");
  if (!secret.empty() && !secrets_equal(headers.at("authorization"), "Bearer " + secret))
    return http_error(self, id, 401, "wrong secret: the request is refused");
  if (call.path() == "/v1/status" && call.method() == "GET")
    return with_status(self, [self, id](const ServeStatus& status) { http_send(self, id, 200, to_json(status)); });
  if (call.path() == "/metrics" && call.method() == "GET")
    return with_status(self, [self, id](const ServeStatus& status) {
      http_send(self, id, 200, self->state.metrics.prometheus_text(status), "text/plain; version=0.0.4");
    });
  const std::string prefix = "/v1/evaluations";
  const bool one = call.path().rfind(prefix + "/", 0) == 0;
  if (call.path() == prefix && call.method() == "POST")
    return post_evaluations(self, call);
  if (one && call.method() == "GET") {
    const std::string request_id = call.path().substr(prefix.size() + 1);
    if (!st.requests.known(request_id))
      return http_error(self, id, 404,
                        "unknown request id '" + request_id + "': never submitted here, or answered more than " +
                            std::to_string(st.config.table_limits.keep.count()) + " s or " +
                            std::to_string(st.config.table_limits.max_answers) + " answers ago and forgotten (" +
                            "--journal-keep, --max-answers); submit it with POST " + prefix);
    if (const EvalResult* answer = st.requests.answer_of(request_id))
      return http_send(self, id, 200, to_json(*answer));
    const auto wait = call.query().find("wait");
    const double seconds = wait == call.query().end() ? 0.0 : std::atof(wait->second.c_str());
    if (seconds > 0)
      return st.requests.long_poll(request_id, std::to_string(id),
                                   self->clock().now() +
                                       std::chrono::milliseconds(static_cast<int>(1000 * std::min(seconds, 600.0))));
    return http_send(self, id, 202, pending_json(request_id));
  }
  if (one && call.method() == "DELETE") {  // withdraw (cancel) it
    const std::string request_id = call.path().substr(prefix.size() + 1);
    return withdraw(self, request_id, [self, id, request_id](int status, const std::string& why) {
      if (status != 202)
        return http_error(self, id, status, why);
      http_send(self, id, 202, pending_json(request_id));  // its answer, CANCELLED, follows at once
    });
  }
  if (call.path() == prefix || one)
    return http_error(self, id, 405, "use POST " + prefix + ", GET " + prefix + "/<request_id>[?wait=S] or DELETE " +
                                         prefix + "/<request_id>");
  http_error(self, id, 404, "no such path: the API is POST " + prefix + ", GET " + prefix +
                                "/<id>, GET /v1/status, GET /v1/health and GET /metrics");
}

void report_progress(self_ptr self, clock_type::time_point now) {
  auto& st = self->state;
  const double seconds = std::chrono::duration<double>(now - st.progress_at).count();
  if (st.served > st.progress_served || st.requests.in_flight() > 0)
    spdlog::info("kgym serve: {} answers in the last {:.0f} s ({:.0f}/s), {} in flight, {} answers and {} refusals "
                 "in all",
                 st.served - st.progress_served, seconds, (st.served - st.progress_served) / seconds,
                 st.requests.in_flight(), st.served, st.refused);
  st.progress_at = now;
  st.progress_served = st.served;
}

void tick(self_ptr self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  for (auto& r : st.requests.due(now))  // answers whose ZeroMQ client could not take them before
    zmq_send(self, r.route, std::move(r.answer), true, std::max<int64_t>(steady_ns(r.until), 1));
  for (const auto& [id, connection] : st.requests.expired_polls(now))  // long polls out of time: still pending
    http_send(self, std::stoull(connection), 202, pending_json(id));
  if (now - st.progress_at >= progress_interval) {
    report_progress(self, now);
    release_free_memory();  // what the interval's requests freed: halves serve's RSS creep (README, soak)
  }
  if (st.config.on_counts)
    st.config.on_counts(counts_now(self));
  if (st.draining && st.requests.in_flight() == 0)
    st.config.outbox->set_drained();
  self->delayed_send(self, st.config.tick, tick_atom::value);
}

// A restart with a journal: answers kept are served from it (sent again to a ZeroMQ client
// that never had its answer), the rest evaluated again; from then on the journal is its writer's.
void restore_from_journal(self_ptr self) {
  auto& st = self->state;
  request_journal* journal = st.config.journal;
  const int forgotten = journal->compact(st.config.table_limits.keep);
  auto entries = journal->load();
  caf::weak_actor_ptr weak{self->ctrl()};  // the writer's thread wakes this actor (a weak ref: no cycle)
  st.writer = std::make_unique<journal_writer>(*journal, [weak] {
    if (auto strong = weak.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(strong), committed_atom::value);
  });
  size_t kept = 0, again = 0, resent = 0;
  const auto now = self->clock().now();
  for (auto& e : entries) {
    if (e.answer) {
      st.requests.restore_answer(*e.answer, now);
      ++kept;
      if (e.route && !e.delivered) {
        zmq_send(self, *e.route, *e.answer, true);
        ++resent;
      }
      continue;
    }
    if (!e.request.has_task() && st.config.suite->count(e.request.task_id()))
      *e.request.mutable_task() = st.config.suite->at(e.request.task_id());
    st.requests.restore_unfinished(e.request.request_id(), e.route);
    start_evaluation(self, e.request, "the journal (accepted before a restart)");
    ++again;
  }
  spdlog::info("kgym serve: journal {}: {} answers kept ({} sent again to their ZeroMQ client), {} unfinished "
               "requests evaluated again, {} answers older than {} s forgotten",
               journal->path(), kept, resent, again, forgotten, st.config.table_limits.keep.count());
}

// Hands what this actor gave the journal's writer over. Answers (their clients wait for the
// commit): while the writer is idle, after the messages already in the mailbox (a burst of
// answers is one commit), committed here on this actor's thread when fewer than few_answers
// (journal_writer::commit_here: no thread switch before they are sent); while it is busy, with
// its next batch (it says when a commit is done: committed_atom); at once when many have
// gathered. The rest, and anything still held, within flush_every (accepted requests are
// committed within the journal's batch window anyway). Waking the writer for each request, or
// committing each answer alone, cost it its batches.
constexpr size_t few_answers = 64;

void flush(self_ptr self) {
  auto& st = self->state;
  std::optional<std::vector<EvalResult>> committed;
  if (st.answers_to_flush > 0 && st.answers_to_flush < few_answers)
    committed = st.writer->commit_here();  // idle writer: committed here, sent at once
  if (!committed)
    st.writer->flush();
  st.answers_to_flush = 0;
  st.others_to_flush = false;
  if (committed) {
    st.committed_at_once += static_cast<int64_t>(committed->size());
    for (auto& answer : *committed)
      release(self, std::move(answer));
  }
}

void flush_when_idle(self_ptr self) {
  auto& st = self->state;
  if (!st.writer)
    return;
  if (st.answers_to_flush >= few_answers)
    return flush(self);
  if (st.answers_to_flush > 0 && !st.flush_queued && st.writer->idle()) {
    st.flush_queued = true;
    self->send(self, flush_atom::value, false);
  }
  // A flush on its way hands over everything gathered, and this runs again after it.
  if ((st.answers_to_flush > 0 || st.others_to_flush) && !st.flush_queued) {
    const auto within = st.answers_to_flush > 0 ? flush_every : st.config.journal->batch_window() / 2;
    const auto due = self->clock().now() + within;
    if (due < st.flush_due) {
      st.flush_due = due;
      self->delayed_send(self, within, flush_atom::value, true);
    }
  }
}

// The end: each waiter left (past the drain limit) hears why. Returns how many were told.
uint64_t tell_unfinished(self_ptr self) {
  auto& st = self->state;
  uint64_t told = 0;
  const int limit_s = static_cast<int>(st.config.drain_timeout.count());
  for (const auto& [id, waiting] : st.requests.unfinished()) {
    EvalResult answer;
    answer.set_request_id(id);
    answer.set_error("the server stopped before this evaluation finished (its drain limit is " +
                     std::to_string(limit_s) + " s): send the request again");
    for (const auto& w : waiting.zmq) {
      zmq_send(self, w.route, answer);
      ++told;
    }
    for (const auto& connection : waiting.http) {
      http_send(self, std::stoull(connection), 503, to_json(answer));
      ++told;
    }
  }
  return told;
}

api_service_actor::behavior_type api_service_impl(self_ptr self, api_service_config config) {
  self->state.config = std::move(config);
  self->state.requests = request_table(self->state.config.table_limits);
  self->state.progress_at = self->clock().now();
  if (self->state.config.journal)
    restore_from_journal(self);
  self->delayed_send(self, self->state.config.tick, tick_atom::value);
  auto outbox = self->state.config.outbox;
  self->attach_functor([outbox](const caf::error& reason) {
    if (reason && reason != caf::exit_reason::user_shutdown)
      outbox->set_failed("the API service stopped: " + caf::to_string(reason));
  });
  return {
      [self](submit_atom, EvalRequest& request, const ReplyRoute& route, const std::string& origin,
             std::string& error) {
        submit(self, request, route, origin, std::move(error));
        flush_when_idle(self);
      },
      [self](http_atom, const HttpCall& call) {
        handle_http(self, call);
        flush_when_idle(self);
      },
      [self](delivered_atom, const std::vector<std::string>& ids) {
        if (!self->state.writer)
          return;
        for (const auto& id : ids)
          self->state.writer->delivered(id);
        self->state.others_to_flush = true;
        flush_when_idle(self);
      },
      [self](undelivered_atom, const ReplyRoute& route, EvalResult& answer, int64_t retry_until_ns) {
        auto& requests = self->state.requests;
        const auto now = self->clock().now();
        if (retry_until_ns == 0)
          return requests.redeliver_later(route, answer, now);
        const clock_type::time_point until{std::chrono::nanoseconds(retry_until_ns)};
        requests.retry({route, std::move(answer), until}, now);
      },
      [self](committed_atom) {
        auto answers = self->state.writer->take_committed();
        self->state.committed_by_writer += static_cast<int64_t>(answers.size());
        for (auto& answer : answers)
          release(self, std::move(answer));
        flush_when_idle(self);
      },
      [self](tick_atom) {
        tick(self);
        flush_when_idle(self);
      },
      [self](flush_atom, bool from_timer) {
        if (!from_timer)
          self->state.flush_queued = false;
        else if (self->clock().now() >= self->state.flush_due)  // not a later one's, set before
          self->state.flush_due = clock_type::time_point::max();
        flush(self);
        flush_when_idle(self);  // what the answers committed here left (a compaction)
      },
      [self](drain_atom) {
        self->state.draining = true;
        spdlog::info("kgym serve: stopping; {} requests in flight", self->state.requests.in_flight());
        if (self->state.requests.in_flight() == 0)
          self->state.config.outbox->set_drained();
      },
      [self](finish_atom) {
        // Answers still waiting for their clients to take them go out with the last answers
        // (the serve loop tries each for a while), not with this actor.
        for (auto& r : self->state.requests.due(clock_type::time_point::max()))
          zmq_send(self, r.route, std::move(r.answer));
        const uint64_t told = tell_unfinished(self);
        if (told > 0)
          spdlog::info("kgym serve: {} clients of requests left unfinished are told so", told);
        if (self->state.writer)
          self->state.writer->stop();  // everything posted is committed; the journal is ours again
        if (self->state.config.journal)
          self->state.config.journal->settle_deliveries();  // every answer handed over counts as delivered
        return counts_now(self);
      },
      [self](status_atom) {
        auto promise = self->make_response_promise<ServeStatus>();
        with_status(self, [promise](const ServeStatus& status) mutable { promise.deliver(status); });
        return promise;
      },
  };
}

}  // namespace

api_service_actor spawn_api_service(caf::actor_system& system, api_service_config config) {
  return system.spawn(api_service_impl, std::move(config));
}

}  // namespace kgym
