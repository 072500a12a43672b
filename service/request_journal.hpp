// request_journal: what `kgym serve --state-dir DIR` accepted and answered, on disk (SQLite in
// DIR/journal.sqlite, WAL), so a restart with the same directory loses nothing: unfinished
// requests are evaluated again without a client re-sending them, and finished ones are answered
// from it (duplicate: true). The serve loop commits accepted requests in a batch at most
// `batch_window` after its first record (commit_when_due: one commit per request costs 3-4x the
// SQLite work of one per ten), answers before it sends them, and always before it acknowledges
// an HTTP submission.
//
// Two strengths of commit, because a sync costs a disk round trip on every request's path:
// commit() leaves the batch in the WAL file (the kernel's page cache): it survives the server's
// crash or SIGKILL, not the machine's power loss; commit_synced() also syncs the WAL to disk,
// and is what an HTTP 202 waits for (the client may forget a request once acknowledged). A
// power loss can then cost answers and ZeroMQ requests (whose client is still waiting and must
// re-send anyway, its connection gone), never an acknowledged request.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

class request_journal {
 public:
  static constexpr std::chrono::milliseconds default_delivery_grace{2000};
  static constexpr std::chrono::milliseconds default_batch_window{20};  // kgym serve --journal-batch-ms

  // Opens or creates the journal in `dir` (made if missing); throws with what to do.
  // `delivery_grace`: how long after an answer was handed to ZeroMQ it is journaled as
  // delivered. ZeroMQ sends from a queue of its own, so a server killed just after a send may
  // take the answer with it: within the grace a restart delivers it again (a client may see it
  // twice; kgym_client ignores the second), after it the answer has long reached the kernel.
  // `batch_window`: how long a batch may stay open before commit_when_due ends it.
  explicit request_journal(const std::string& dir,
                           std::chrono::milliseconds delivery_grace = default_delivery_grace,
                           std::chrono::milliseconds batch_window = default_batch_window);
  ~request_journal();
  request_journal(const request_journal&) = delete;
  request_journal& operator=(const request_journal&) = delete;

  // Recorded in the open batch; `request` as it will be evaluated (task resolved), secret cleared;
  // `route`: where a ZeroMQ client's answer goes (null over HTTP, whose client fetches it).
  void accepted(const EvalRequest& request, const ReplyRoute* route = nullptr);
  // `delivered`: handed to every waiting ZeroMQ client (always true over HTTP). An answer that
  // was not is delivered after a restart, and marked with delivered() once it is. Either mark
  // reaches the journal `delivery_grace` later (a commit after that applies it).
  void answered(const EvalResult& answer, bool delivered = true);
  void delivered(const std::string& request_id);
  // Ends the open batch: everything recorded so far survives the process when this returns
  // (delivery marks once their grace has passed).
  void commit();
  // commit() once the open batch is `batch_window` old (or a delivery mark's grace has passed);
  // returns how long until it is next due (max when nothing waits), for the caller's poll.
  std::chrono::milliseconds commit_when_due();
  // Applies every delivery mark now (a clean stop, once ZeroMQ has sent what it held).
  void settle_deliveries();
  // Ends the open batch and syncs: everything recorded so far is on disk when this returns.
  void commit_synced();

  struct entry {
    EvalRequest request;
    std::optional<EvalResult> answer;
    std::optional<ReplyRoute> route;  // a ZeroMQ client's
    bool delivered = false;           // the answer reached its ZeroMQ client
  };
  // Every request kept, in the order accepted.
  std::vector<entry> load();
  // Forgets answered requests older than `keep`; returns how many.
  int compact(std::chrono::seconds keep);
  std::string path() const { return path_; }
  std::chrono::milliseconds batch_window() const { return batch_window_; }

 private:
  void exec(const char* sql);
  void step(sqlite3_stmt* statement);
  void add_missing_columns();
  void begin();

  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* answer_ = nullptr;
  sqlite3_stmt* delivered_ = nullptr;
  sqlite3_stmt* find_seq_ = nullptr;
  // The seq of each request accepted since the journal opened, until its delivery mark (or the
  // compaction that removes its row): its answer and its mark find the row without a lookup
  // (over ZeroMQ the mark comes after the answer, for every request). Others (accepted before
  // a restart) are looked up.
  std::unordered_map<std::string, int64_t> seqs_;
  std::optional<int64_t> seq_of(const std::string& request_id);
  void mark_delivered(const std::string& request_id, int64_t seq);
  void forget_removed_seqs();
  bool in_batch_ = false;
  std::chrono::steady_clock::time_point batch_opened_;
  std::chrono::milliseconds delivery_grace_;
  std::chrono::milliseconds batch_window_;
  std::deque<std::pair<int64_t, std::chrono::steady_clock::time_point>> deliveries_;  // marks waiting (seq)
  void apply_deliveries(std::chrono::steady_clock::time_point due);
  bool unsynced_ = false;  // commits since the last sync
  std::string path_;
};

}  // namespace kgym
