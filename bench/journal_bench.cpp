// The request journal alone (service/request_journal), written as kgym serve's journal writer
// writes it: passes of B accepted requests and B answers (each answering a request accepted
// one pass before), a commit after every pass (answers are committed before they are sent),
// then each answer's delivery mark by request id as ZeroMQ's hand-over reports it (a
// training client's path; over HTTP an answer is delivered once kept), written once its grace
// has passed, then the rest settled.
// Prints the writer's CPU per request, requests/s, and the journal's size per 100,000
// requests, beside the baseline measured in the same run: the same records as plain appends
// to one table in the same transactions (what SQLite's commits and B-tree appends cost with no
// lookups or row rewrites), so the ratio says what the journal's own layout adds.
//
//   build/journal_bench [REQUESTS] [PASS] [SOURCE_BYTES]   (default 100000 32 1500)
#include <sqlite3.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "service/request_journal.hpp"

namespace {

using namespace kgym;
namespace fs = std::filesystem;

double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

EvalRequest request(size_t i, const std::string& source) {
  EvalRequest r;
  r.set_request_id("bench-" + std::to_string(i));
  r.set_task_id("softmax_rows");
  r.set_candidate_source(source);
  return r;
}

EvalResult answer(size_t i) {
  EvalResult a;
  a.set_request_id("bench-" + std::to_string(i));
  ExecResult* result = a.mutable_result();
  result->set_request_id(a.request_id());
  result->set_verdict(OK);
  result->set_compiled(true);
  result->set_correct(true);
  result->set_speedup(1.25);
  result->set_message("correct, speedup 1.250x");
  result->set_executor("w0/0");
  return a;
}

uintmax_t dir_bytes(const std::string& dir) {
  uintmax_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file())
      total += entry.file_size();
  return total;
}

struct figures {
  double cpu_us_per_request, requests_per_s, mib_per_100k;
};

// Runs passes 0..passes of one run (the last answers only) and what ends it.
figures measure(const std::string& dir, size_t requests, size_t passes, const std::function<void(size_t)>& pass_of,
                const std::function<void()>& finish) {
  const double cpu0 = cpu_s();
  const auto wall0 = std::chrono::steady_clock::now();
  for (size_t p = 0; p <= passes; ++p)
    pass_of(p);
  finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double cpu = cpu_s() - cpu0;
  return {cpu * 1e6 / static_cast<double>(requests), static_cast<double>(requests) / wall,
          static_cast<double>(dir_bytes(dir)) / (1 << 20) * 100000.0 / static_cast<double>(requests)};
}

// The journal as the writer drives it: pass p accepts requests [pB, (p+1)B) and answers
// [(p-1)B, pB), then commits; delivery marks reach it after their grace (commit_when_due).
figures journal_run(const std::string& dir, size_t requests, size_t pass, const std::string& source) {
  request_journal journal(dir);
  return measure(
      dir, requests, (requests + pass - 1) / pass,
      [&](size_t p) {
        for (size_t i = p * pass; i < std::min((p + 1) * pass, requests); ++i)
          journal.accepted(request(i, source));
        if (p > 0)
          for (size_t i = (p - 1) * pass; i < std::min(p * pass, requests); ++i)
            journal.answered(answer(i), false);
        journal.commit();
        if (p > 0)
          for (size_t i = (p - 1) * pass; i < std::min(p * pass, requests); ++i)
            journal.delivered(answer(i).request_id());
        journal.commit_when_due();
      },
      [&] { journal.settle_deliveries(); });
}

// The baseline: the same records appended to one table, one row per record, in the same
// transactions (BEGIN ... COMMIT a pass), WAL and synchronous=NORMAL as the journal.
figures append_run(const std::string& dir, size_t requests, size_t pass, const std::string& source) {
  fs::create_directories(dir);
  sqlite3* db = nullptr;
  sqlite3_open((dir + "/append.sqlite").c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                   "CREATE TABLE records (seq INTEGER PRIMARY KEY, kind INTEGER, data BLOB)",
               nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO records (kind, data) VALUES (?, ?)", -1, &insert, nullptr);
  auto append = [&](int kind, const std::string& bytes) {
    sqlite3_bind_int(insert, 1, kind);
    sqlite3_bind_blob(insert, 2, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    sqlite3_step(insert);
    sqlite3_reset(insert);
  };
  figures f = measure(
      dir, requests, (requests + pass - 1) / pass,
      [&](size_t p) {
        sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
        for (size_t i = p * pass; i < std::min((p + 1) * pass, requests); ++i)
          append(0, request(i, source).SerializeAsString());
        if (p > 0)
          for (size_t i = (p - 1) * pass; i < std::min(p * pass, requests); ++i) {
            append(1, answer(i).SerializeAsString());
            append(2, answer(i).request_id());  // its delivery mark
          }
        sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
      },
      [] {});
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return f;
}

}  // namespace

// The positional argument `i` as a count of at least 1, `fallback` where it is not given; 0
// (and a word such as --help) when it is not a positive whole number.
size_t count_arg(int argc, char** argv, int i, size_t fallback) {
  if (i >= argc)
    return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(argv[i], &end, 10);
  return end != argv[i] && *end == '\0' && argv[i][0] != '-' ? static_cast<size_t>(value) : 0;
}

int main(int argc, char** argv) {
  const size_t requests = count_arg(argc, argv, 1, 100000);
  const size_t pass = count_arg(argc, argv, 2, 32);
  const size_t source_bytes = count_arg(argc, argv, 3, 1500);
  if (argc > 4 || requests == 0 || pass == 0 || source_bytes == 0) {
    std::fprintf(stderr,
                 "usage: journal_bench [REQUESTS] [PASS] [SOURCE_BYTES]   (default 100000 32 1500)\n"
                 "The request journal's writer CPU per request, requests/s and size per 100,000 requests,\n"
                 "beside plain appends of the same records in the same run; each a whole number above 0.\n");
    const std::string first = argc > 1 ? argv[1] : "";
    return first == "--help" || first == "-h" ? 0 : 2;
  }
  const std::string source(source_bytes, 'x');
  char dir_template[] = "/tmp/kgym-journal-bench-XXXXXX";
  const std::string root = mkdtemp(dir_template);
  utsname machine{};
  uname(&machine);
  std::printf("machine: %s, %u CPUs (%s); %zu requests, passes of %zu, %zu-byte programs; %s under %s\n",
              machine.nodename, std::thread::hardware_concurrency(), machine.machine, requests, pass, source.size(),
              sqlite3_libversion(), root.c_str());
  std::printf("| run | writer CPU us/request | requests/s | journal MiB per 100,000 | journal / appends |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int round = 1; round <= 3; ++round) {  // alternated, so a drift of the machine falls on both
    const figures base = append_run(root + "/append" + std::to_string(round), requests, pass, source);
    const figures kept = journal_run(root + "/journal" + std::to_string(round), requests, pass, source);
    std::printf("| %d appends | %.1f | %.0f | %.1f | |\n", round, base.cpu_us_per_request, base.requests_per_s,
                base.mib_per_100k);
    std::printf("| %d journal | %.1f | %.0f | %.1f | %.2fx CPU |\n", round, kept.cpu_us_per_request,
                kept.requests_per_s, kept.mib_per_100k, kept.cpu_us_per_request / base.cpu_us_per_request);
  }
  fs::remove_all(root);
  return 0;
}
