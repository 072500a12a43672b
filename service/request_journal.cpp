#include "service/request_journal.hpp"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <stdexcept>

#include "messages/stored_upgrade.hpp"

namespace kgym {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

request_journal::request_journal(const std::string& dir, std::chrono::milliseconds delivery_grace,
                                 std::chrono::milliseconds batch_window)
    : delivery_grace_(delivery_grace), batch_window_(batch_window) {
  std::filesystem::create_directories(dir);
  path_ = (std::filesystem::path(dir) / "journal.sqlite").string();
  if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK)
    throw std::runtime_error("cannot open the request journal " + path_ + ": " + sqlite3_errmsg(db_) +
                             " (is --state-dir writable?)");
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=NORMAL");  // commits survive the process; commit_synced syncs
  // No AUTOINCREMENT (a journal made before keeps it): its counter row was written again in
  // every commit that accepted a request, a page more each (without it journal_bench's writer
  // spends about a tenth less CPU a request: bench/RESULTS.md). A seq may then come back after compaction
  // removed the newest rows; compaction removes every reference to them at once (compact).
  exec("CREATE TABLE IF NOT EXISTS requests (seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, "
       "request BLOB NOT NULL, answer BLOB, accepted_at REAL, answered_at REAL, route BLOB, delivered INTEGER)");
  add_missing_columns();
  // Answers and delivery marks are rows of their own, keyed by their request's seq: appended, so
  // nothing already written is written again (an UPDATE of the request's row rewrote its request
  // too, twice a request). Rows written before they existed keep theirs in `requests`.
  exec("CREATE TABLE IF NOT EXISTS answers (seq INTEGER PRIMARY KEY, answer BLOB NOT NULL, answered_at REAL NOT NULL)");
  exec("CREATE TABLE IF NOT EXISTS deliveries (seq INTEGER PRIMARY KEY)");
  if (sqlite3_prepare_v2(db_,
                         "INSERT OR IGNORE INTO requests (id, request, accepted_at, route, delivered) "
                         "VALUES (?, ?, ?, ?, 0)",
                         -1, &insert_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO answers (seq, answer, answered_at) VALUES (?, ?, ?)", -1,
                         &answer_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "INSERT OR IGNORE INTO deliveries (seq) VALUES (?)", -1, &delivered_, nullptr) !=
          SQLITE_OK ||
      sqlite3_prepare_v2(db_, "SELECT seq FROM requests WHERE id = ?", -1, &find_seq_, nullptr) != SQLITE_OK)
    throw std::runtime_error("request journal " + path_ + ": " + sqlite3_errmsg(db_));
}

request_journal::~request_journal() {
  try {
    commit();
  } catch (...) {
  }
  sqlite3_finalize(insert_);
  sqlite3_finalize(answer_);
  sqlite3_finalize(delivered_);
  sqlite3_finalize(find_seq_);
  sqlite3_close(db_);
}

void request_journal::exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw std::runtime_error("request journal " + path_ + ": " + message + " (in: " + sql + ")");
  }
}

// A journal written before routes were kept gains their columns (its rows: no route, delivered).
void request_journal::add_missing_columns() {
  bool has_route = false;
  sqlite3_stmt* info = nullptr;
  sqlite3_prepare_v2(db_, "SELECT name FROM pragma_table_info('requests')", -1, &info, nullptr);
  while (sqlite3_step(info) == SQLITE_ROW)
    has_route |= std::string(reinterpret_cast<const char*>(sqlite3_column_text(info, 0))) == "route";
  sqlite3_finalize(info);
  if (!has_route) {
    exec("ALTER TABLE requests ADD COLUMN route BLOB");
    exec("ALTER TABLE requests ADD COLUMN delivered INTEGER");
  }
}

void request_journal::begin() {
  if (!in_batch_) {
    exec("BEGIN");
    in_batch_ = true;
    batch_opened_ = std::chrono::steady_clock::now();
  }
}

void request_journal::step(sqlite3_stmt* statement) {
  const int rc = sqlite3_step(statement);
  sqlite3_reset(statement);
  if (rc != SQLITE_DONE)
    throw std::runtime_error("request journal " + path_ + ": " + sqlite3_errmsg(db_));
}

void request_journal::accepted(const EvalRequest& request, const ReplyRoute* route) {
  begin();
  std::string bytes;
  if (request.secret().empty()) {
    bytes = request.SerializeAsString();
  } else {  // never on disk
    EvalRequest kept = request;
    kept.clear_secret();
    bytes = kept.SerializeAsString();
  }
  sqlite3_bind_text(insert_, 1, request.request_id().c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_blob(insert_, 2, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  sqlite3_bind_double(insert_, 3, unix_now());
  if (route) {
    const std::string route_bytes = route->SerializeAsString();
    sqlite3_bind_blob(insert_, 4, route_bytes.data(), static_cast<int>(route_bytes.size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_null(insert_, 4);
  }
  step(insert_);
  if (sqlite3_changes(db_) == 1)  // a request id seen before keeps its first row (seq_of finds it)
    seqs_[request.request_id()] = sqlite3_last_insert_rowid(db_);
}

std::optional<int64_t> request_journal::seq_of(const std::string& request_id) {
  if (auto found = seqs_.find(request_id); found != seqs_.end())
    return found->second;
  sqlite3_bind_text(find_seq_, 1, request_id.c_str(), -1, SQLITE_TRANSIENT);
  std::optional<int64_t> seq;
  if (sqlite3_step(find_seq_) == SQLITE_ROW)
    seq = sqlite3_column_int64(find_seq_, 0);
  sqlite3_reset(find_seq_);
  return seq;
}

void request_journal::answered(const EvalResult& answer, bool delivered) {
  const auto seq = seq_of(answer.request_id());
  if (!seq)  // never accepted here: nothing to answer
    return;
  begin();
  const std::string bytes = answer.SerializeAsString();
  sqlite3_bind_int64(answer_, 1, *seq);
  sqlite3_bind_blob(answer_, 2, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  sqlite3_bind_double(answer_, 3, unix_now());
  step(answer_);
  if (delivered)
    mark_delivered(answer.request_id(), *seq);
}

void request_journal::delivered(const std::string& request_id) {
  if (const auto seq = seq_of(request_id))
    mark_delivered(request_id, *seq);
}

void request_journal::mark_delivered(const std::string& request_id, int64_t seq) {
  deliveries_.emplace_back(seq, std::chrono::steady_clock::now());
  seqs_.erase(request_id);  // nothing more is written for it
}

void request_journal::apply_deliveries(std::chrono::steady_clock::time_point due) {
  while (!deliveries_.empty() && deliveries_.front().second <= due) {
    begin();
    sqlite3_bind_int64(delivered_, 1, deliveries_.front().first);
    step(delivered_);
    deliveries_.pop_front();
  }
}

void request_journal::settle_deliveries() {
  apply_deliveries(std::chrono::steady_clock::time_point::max());
  commit();
}

void request_journal::commit() {
  apply_deliveries(std::chrono::steady_clock::now() - delivery_grace_);
  if (in_batch_) {
    in_batch_ = false;
    exec("COMMIT");
    unsynced_ = true;
  }
}

std::chrono::milliseconds request_journal::commit_when_due() {
  using namespace std::chrono;
  const auto now = steady_clock::now();
  if (in_batch_ && now - batch_opened_ >= batch_window_)
    commit();
  steady_clock::time_point next = steady_clock::time_point::max();
  if (in_batch_)
    next = batch_opened_ + batch_window_;
  else if (!deliveries_.empty())
    next = deliveries_.front().second + delivery_grace_;
  if (next == steady_clock::time_point::max())
    return milliseconds::max();
  if (!in_batch_ && next <= now) {  // a delivery mark is due: it opens a batch of its own
    apply_deliveries(now - delivery_grace_);
    return batch_window_;
  }
  return std::max(milliseconds(0), duration_cast<milliseconds>(next - now) + milliseconds(1));
}

void request_journal::commit_synced() {
  commit();
  // Under synchronous=NORMAL a checkpoint syncs the log before it copies pages to the
  // database: every commit so far is then on disk. (The mode cannot change inside a
  // transaction, so a FULL commit of this batch alone is not an option; seen with strace on
  // SQLite 3.40: two fdatasyncs, the log's and the database's.)
  if (unsynced_)
    exec("PRAGMA wal_checkpoint(PASSIVE)");
  unsynced_ = false;
}

std::vector<request_journal::entry> request_journal::load() {
  commit();
  std::vector<entry> entries;
  sqlite3_stmt* select = nullptr;
  // An answer in `answers` is delivered once its mark is in `deliveries`; a row answered before
  // those tables existed keeps both in its own columns (delivered NULL: written before routes
  // were kept, when every answer was delivered).
  sqlite3_prepare_v2(db_,
                     "SELECT r.request, COALESCE(a.answer, r.answer), r.route, "
                     "CASE WHEN a.seq IS NOT NULL THEN d.seq IS NOT NULL "
                     "ELSE r.delivered IS NULL OR r.delivered != 0 END "
                     "FROM requests r LEFT JOIN answers a ON a.seq = r.seq LEFT JOIN deliveries d ON d.seq = r.seq "
                     "ORDER BY r.seq",
                     -1, &select, nullptr);
  while (sqlite3_step(select) == SQLITE_ROW) {
    entry e;
    e.request.ParseFromArray(sqlite3_column_blob(select, 0), sqlite3_column_bytes(select, 0));
    if (sqlite3_column_type(select, 1) != SQLITE_NULL) {
      e.answer.emplace();
      e.answer->ParseFromArray(sqlite3_column_blob(select, 1), sqlite3_column_bytes(select, 1));
      upgrade_stored(e.answer->mutable_result());
    }
    if (sqlite3_column_type(select, 2) != SQLITE_NULL) {
      e.route.emplace();
      e.route->ParseFromArray(sqlite3_column_blob(select, 2), sqlite3_column_bytes(select, 2));
    }
    e.delivered = sqlite3_column_int(select, 3) != 0;
    entries.push_back(std::move(e));
  }
  sqlite3_finalize(select);
  return entries;
}

int request_journal::compact(std::chrono::seconds keep) {
  commit();
  sqlite3_stmt* remove = nullptr;
  sqlite3_prepare_v2(db_,
                     "DELETE FROM requests WHERE seq IN (SELECT seq FROM answers WHERE answered_at < ?1) "
                     "OR (answered_at IS NOT NULL AND answered_at < ?1)",
                     -1, &remove, nullptr);
  sqlite3_bind_double(remove, 1, unix_now() - static_cast<double>(keep.count()));
  // One transaction: an answer or mark left behind by a crash in between would belong to the
  // next request given its seq.
  int removed = 0;
  try {
    exec("BEGIN");
    sqlite3_step(remove);
    sqlite3_finalize(remove);
    remove = nullptr;
    removed = sqlite3_changes(db_);
    exec("DELETE FROM answers WHERE seq NOT IN (SELECT seq FROM requests)");
    exec("DELETE FROM deliveries WHERE seq NOT IN (SELECT seq FROM requests)");
    exec("COMMIT");
  } catch (...) {
    sqlite3_finalize(remove);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);  // the journal as it was; the caller hears why
    throw;
  }
  forget_removed_seqs();
  exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return removed;
}

void request_journal::forget_removed_seqs() {
  // Answers never marked delivered (their client gone) would otherwise stay in seqs_.
  std::unordered_set<int64_t> kept;
  sqlite3_stmt* select = nullptr;
  sqlite3_prepare_v2(db_, "SELECT seq FROM requests", -1, &select, nullptr);
  while (sqlite3_step(select) == SQLITE_ROW)
    kept.insert(sqlite3_column_int64(select, 0));
  sqlite3_finalize(select);
  for (auto it = seqs_.begin(); it != seqs_.end();)
    it = kept.count(it->second) ? std::next(it) : seqs_.erase(it);
  // Nor may a delivery mark still in its grace reach a request given the seq again.
  deliveries_.erase(std::remove_if(deliveries_.begin(), deliveries_.end(),
                                   [&](const auto& mark) { return !kept.count(mark.first); }),
                    deliveries_.end());
}

}  // namespace kgym
