// request_journal: what `kgym serve --state-dir DIR` accepted and answered, on disk (SQLite in
// DIR/journal.sqlite, WAL, synced at each commit), so a restart with the same directory loses
// nothing: unfinished requests are evaluated again without a client re-sending them, and
// finished ones are answered from it (duplicate: true). The serve loop commits once per turn
// (a batch), and before it acknowledges an HTTP submission.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

class request_journal {
 public:
  // Opens or creates the journal in `dir` (made if missing); throws with what to do.
  explicit request_journal(const std::string& dir);
  ~request_journal();
  request_journal(const request_journal&) = delete;
  request_journal& operator=(const request_journal&) = delete;

  // Recorded in the open batch; `request` as it will be evaluated (task resolved), secret cleared.
  void accepted(const EvalRequest& request);
  void answered(const EvalResult& answer);
  // Ends the open batch: everything recorded so far is on disk when this returns.
  void commit();

  struct entry {
    EvalRequest request;
    std::optional<EvalResult> answer;
  };
  // Every request kept, in the order accepted.
  std::vector<entry> load();
  // Forgets answered requests older than `keep`; returns how many.
  int compact(std::chrono::seconds keep);
  std::string path() const { return path_; }

 private:
  void exec(const char* sql);
  void begin();
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* answer_ = nullptr;
  bool in_batch_ = false;
  std::string path_;
};

}  // namespace kgym
