// journal_writer: the request journal on a thread of its own. SQLite's work (about 15 us a
// request) held the serve loop's thread, which also ran the ZeroMQ socket; now the API service
// actor (actors/api_service.hpp) posts what it accepted, answered and delivered, and the writer
// records and commits it, answers at once (in whatever batch has gathered meanwhile), accepted
// requests within the journal's batch window.
//
// Answers are still committed before any client has them: the API service hands its answers to
// the writer and gets them back from take_committed() once committed (on_committed says when).
// commit_synced() waits until everything posted so far is on disk (an HTTP submission's 202).
// The journal is the writer's alone from construction until stop(). The records are gathered by
// the poster without a lock and handed over by flush(), once a burst (idle() says whether a
// flush would wake the writer): one lock and at most one wake-up a burst, not a few a request
// (each a futex call and a context switch). Everything but take_committed() is for one poster
// at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "service/request_journal.hpp"

namespace kgym {

class journal_writer {
 public:
  // `on_committed` is called on the writer's thread whenever answers were committed (or the
  // journal failed: take_committed() then throws).
  explicit journal_writer(request_journal& journal, std::function<void()> on_committed = {});
  ~journal_writer();  // stop()
  journal_writer(const journal_writer&) = delete;
  journal_writer& operator=(const journal_writer&) = delete;

  // `by_task_id`: the request named one of the server's tasks (it sent no task of its own): it is
  // journaled by its task id only (the journal stays small; a restart resolves it again).
  void accepted(EvalRequest request, std::optional<ReplyRoute> route, bool by_task_id = false);
  // Committed, then given back by take_committed(), in the order answered. `delivered`: nobody
  // waits for it over ZeroMQ (an HTTP client fetches it).
  void answered(EvalResult answer, bool delivered);
  // The answers committed since the last call, in the order they were posted.
  std::vector<EvalResult> take_committed();
  void delivered(std::string request_id);
  void compact(std::chrono::seconds keep);
  // Hands what was gathered since the last flush to the writer.
  void flush();
  // Whether the writer waits for work with nothing handed over: a flush now wakes it. While it is
  // busy, answers gathered meanwhile go with its next batch (one commit for them all).
  bool idle() const;
  // While the writer is idle: records and commits what was gathered here, on the caller's
  // thread, and returns its answers (in order), committed; nullopt while it is busy (then
  // flush()). A few answers committed here reach their clients without two thread switches (the
  // writer's wake-up, and the committed_atom that wakes the API service back).
  std::optional<std::vector<EvalResult>> commit_here();
  // Returns once everything posted before it is committed and synced.
  void commit_synced();
  // Records and commits everything posted, then ends the thread (the journal is the caller's again).
  void stop();

 private:
  struct accept_op {
    EvalRequest request;
    std::optional<ReplyRoute> route;
    bool by_task_id;
  };
  struct answer_op {
    EvalResult answer;
    bool delivered;
  };
  struct delivered_op {
    std::string request_id;
  };
  struct compact_op {
    std::chrono::seconds keep;
  };
  using op = std::variant<accept_op, answer_op, delivered_op, compact_op>;

  void run();
  // Applies `ops`; returns the answers among them (moved out), in order.
  std::vector<EvalResult> apply(std::vector<op>& ops);

  request_journal& journal_;
  mutable std::mutex mutex_;
  std::condition_variable work_;    // posts, sync requests, stop
  std::condition_variable synced_;  // sync generations done
  std::vector<op> gathered_;  // the serve loop's, not yet flushed (no lock)
  bool wake_on_flush_ = false;
  std::vector<op> ops_;
  std::vector<EvalResult> committed_;  // answers committed, not yet taken
  uint64_t sync_wanted_ = 0, sync_done_ = 0;  // generations
  bool stopping_ = false;
  bool sleeping_ = false;  // the writer waits on work_, and nobody has woken it yet
  std::exception_ptr failure_;  // the journal's error, rethrown to the serve loop
  std::function<void()> on_committed_;
  std::thread thread_;
};

}  // namespace kgym
