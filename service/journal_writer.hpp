// journal_writer: the request journal on a thread of its own. SQLite's work (about 15 us a
// request) held the serve loop's thread, which also runs the ZeroMQ socket; now the loop posts
// what it accepted, answered and delivered, and the writer records and commits it, answers at once
// (in whatever batch has gathered meanwhile), accepted requests within the journal's batch window.
//
// Answers are still committed before any client has them: answered() gives each a number, and the
// loop hands an answer out only once committed_through() has reached it (wake_fd() becomes
// readable when it moves). commit_synced() waits until everything posted so far is on disk (an
// HTTP submission's 202). The journal is the writer's alone from construction until stop().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
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
  explicit journal_writer(request_journal& journal);
  ~journal_writer();  // stop()
  journal_writer(const journal_writer&) = delete;
  journal_writer& operator=(const journal_writer&) = delete;

  void accepted(EvalRequest request, std::optional<ReplyRoute> route);
  // Its number: committed once committed_through() >= it.
  uint64_t answered(EvalResult answer, bool delivered);
  void delivered(std::string request_id);
  void compact(std::chrono::seconds keep);
  // Returns once everything posted before it is committed and synced.
  void commit_synced();
  uint64_t committed_through() const;
  // Readable while committed answers wait to be taken; clear_wake() empties it.
  int wake_fd() const { return wake_fd_; }
  void clear_wake();
  // Records and commits everything posted, then ends the thread (the journal is the caller's again).
  void stop();

 private:
  struct accept_op {
    EvalRequest request;
    std::optional<ReplyRoute> route;
  };
  struct answer_op {
    EvalResult answer;
    bool delivered;
    uint64_t number;
  };
  struct delivered_op {
    std::string request_id;
  };
  struct compact_op {
    std::chrono::seconds keep;
  };
  using op = std::variant<accept_op, answer_op, delivered_op, compact_op>;

  void run();
  // Applies `ops`; returns the number of the last answer among them (0: none).
  uint64_t apply(std::vector<op>& ops);

  request_journal& journal_;
  mutable std::mutex mutex_;
  std::condition_variable work_;    // posts, sync requests, stop
  std::condition_variable synced_;  // sync generations done
  std::vector<op> ops_;
  uint64_t answers_posted_ = 0;
  uint64_t committed_through_ = 0;
  uint64_t sync_wanted_ = 0, sync_done_ = 0;  // generations
  bool stopping_ = false;
  std::exception_ptr failure_;  // the journal's error, rethrown to the serve loop
  int wake_fd_ = -1;
  std::thread thread_;
};

}  // namespace kgym
