#include "service/request_journal.hpp"

#include <filesystem>
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
  exec("CREATE TABLE IF NOT EXISTS requests (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
       "request BLOB NOT NULL, answer BLOB, accepted_at REAL, answered_at REAL, route BLOB, delivered INTEGER)");
  add_missing_columns();
  if (sqlite3_prepare_v2(db_, "INSERT OR IGNORE INTO requests (id, request, accepted_at, route) VALUES (?, ?, ?, ?)",
                         -1, &insert_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "UPDATE requests SET answer = ?, answered_at = ?, delivered = ? WHERE id = ?", -1,
                         &answer_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "UPDATE requests SET delivered = 1 WHERE id = ?", -1, &delivered_, nullptr) !=
          SQLITE_OK)
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
  EvalRequest kept = request;
  kept.clear_secret();
  const std::string bytes = kept.SerializeAsString();
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
}

void request_journal::answered(const EvalResult& answer, bool delivered) {
  begin();
  const std::string bytes = answer.SerializeAsString();
  sqlite3_bind_blob(answer_, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  sqlite3_bind_double(answer_, 2, unix_now());
  sqlite3_bind_int(answer_, 3, 0);
  sqlite3_bind_text(answer_, 4, answer.request_id().c_str(), -1, SQLITE_TRANSIENT);
  step(answer_);
  if (delivered)
    this->delivered(answer.request_id());
}

void request_journal::delivered(const std::string& request_id) {
  deliveries_.emplace_back(request_id, std::chrono::steady_clock::now());
}

void request_journal::apply_deliveries(std::chrono::steady_clock::time_point due) {
  while (!deliveries_.empty() && deliveries_.front().second <= due) {
    begin();
    sqlite3_bind_text(delivered_, 1, deliveries_.front().first.c_str(), -1, SQLITE_TRANSIENT);
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
  sqlite3_prepare_v2(db_, "SELECT request, answer, route, delivered FROM requests ORDER BY seq", -1, &select,
                     nullptr);
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
    e.delivered = sqlite3_column_type(select, 3) == SQLITE_NULL || sqlite3_column_int(select, 3) != 0;
    entries.push_back(std::move(e));
  }
  sqlite3_finalize(select);
  return entries;
}

int request_journal::compact(std::chrono::seconds keep) {
  commit();
  sqlite3_stmt* remove = nullptr;
  sqlite3_prepare_v2(db_, "DELETE FROM requests WHERE answered_at IS NOT NULL AND answered_at < ?", -1, &remove,
                     nullptr);
  sqlite3_bind_double(remove, 1, unix_now() - static_cast<double>(keep.count()));
  sqlite3_step(remove);
  sqlite3_finalize(remove);
  const int removed = sqlite3_changes(db_);
  exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return removed;
}

}  // namespace kgym
