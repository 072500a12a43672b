// request_table: what `kgym serve` knows of each request and who waits for its answer. Pure (no
// sockets, no clock of its own): the serve loop tells it what happened and does what it answers.
//
// Memory is bounded: an answer is kept for `keep` after it came and at most `max_answers` answers
// are kept (the oldest go first); an id past that is unknown again (the journal, when there is
// one, keeps answers as long, so a restart knows no more). Answers that could not be handed to
// a ZeroMQ client (it was not connected: a restart of either side, a cut link) wait in a retry
// queue for `redeliver_for`, then stay only in the table for a re-send to find.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

class request_table {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  struct limits {
    std::chrono::seconds keep{86400};
    size_t max_answers = 1000000;
    std::chrono::seconds redeliver_for{600};
    std::chrono::milliseconds redeliver_every{500};
  };

  // A ZeroMQ client waiting: where its answer goes, and whether it is a retry's (duplicate: true).
  struct zmq_waiter {
    ReplyRoute route;
    bool duplicate = false;
  };
  struct http_waiter {
    std::string connection;
    time_point deadline;
  };
  // Who waited for an answer that just came.
  struct waiting {
    std::vector<zmq_waiter> zmq;
    std::vector<std::string> http;
  };
  enum class seen { new_request, in_progress, answered };

  explicit request_table(limits l) : limits_(l) {}

  // A request over ZeroMQ: a new one (evaluate it), one in progress (this client waits too, its
  // answer marked duplicate) or one answered (answer_of has it; reply duplicate).
  seen submit_zmq(const std::string& id, const ReplyRoute& route);
  // A request over HTTP (its answer is fetched with GET): new, in progress or answered.
  seen submit_http(const std::string& id);
  // A request the journal held unfinished at a restart: in progress again, its ZeroMQ client (if
  // it came over ZeroMQ) waiting as if it had just sent it.
  void restore_unfinished(const std::string& id, const std::optional<ReplyRoute>& route);
  // An answer the journal held, answered at `now` (the age it had is not kept).
  void restore_answer(const EvalResult& answer, time_point now);

  // The answer, or null while pending or for an unknown (never seen, or forgotten) id.
  const EvalResult* answer_of(const std::string& id) const;
  bool known(const std::string& id) const { return entries_.count(id) > 0; }
  // Whether a ZeroMQ client waits for this pending request's answer (its delivery is then to be marked).
  bool waits_over_zmq(const std::string& id) const;
  // A long poll: `connection` waits for the answer of a request in progress until `deadline`.
  void long_poll(const std::string& id, const std::string& connection, time_point deadline);
  // Long polls past their deadline, as (id, connection), now no longer waiting.
  std::vector<std::pair<std::string, std::string>> expired_polls(time_point now);

  // The answer came: it is kept (answers beyond the limits are forgotten) and the waiters returned.
  waiting finish(const EvalResult& answer, time_point now);

  // An answer a ZeroMQ client could not take now: tried again every redeliver_every until
  // `redeliver_for` after `now`.
  void redeliver_later(const ReplyRoute& route, const EvalResult& answer, time_point now);
  struct redelivery {
    ReplyRoute route;
    EvalResult answer;
    time_point until;
  };
  // The redeliveries due at `now` (taken out: hand back those that fail again with retry()).
  std::vector<redelivery> due(time_point now);
  void retry(redelivery r, time_point now);
  size_t waiting_redelivery() const { return redeliveries_.size(); }

  // Requests not yet answered and who waits for each (for the stop after the drain limit).
  std::vector<std::pair<std::string, waiting>> unfinished() const;
  size_t in_flight() const { return in_flight_; }
  size_t answers_kept() const { return answered_order_.size(); }
  size_t size() const { return entries_.size(); }

 private:
  struct entry {
    bool done = false;
    EvalResult answer;
    std::vector<zmq_waiter> zmq;
    std::vector<http_waiter> http;
  };
  void forget_old(time_point now);

  limits limits_;
  std::unordered_map<std::string, entry> entries_;
  std::deque<std::pair<time_point, std::string>> answered_order_;  // oldest answer first
  std::deque<std::pair<time_point, redelivery>> redeliveries_;      // (next try, what)
  // Every long poll by its deadline, (id, connection), so finding the expired ones never walks
  // the answers kept; one answered first is still here until its deadline and then skipped.
  std::multimap<time_point, std::pair<std::string, std::string>> polls_;
  size_t in_flight_ = 0;
};

}  // namespace kgym
