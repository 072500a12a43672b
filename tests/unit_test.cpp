// Unit tests of the pieces that need no sandbox: schema mapping, task loading, defaults,
// the command-line parser, summaries, and CAF carrying protobuf messages.
#include <caf/all.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <condition_variable>
#include <mutex>
#include <csignal>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <set>
#include <thread>

#include "messages/openai_wire.pb.h"
#include "policy/openai_wire.hpp"
#include "actors/gpu_executor.hpp"
#include "actors/profiler.hpp"
#include "gpu/executor/trace_ruling.hpp"
#include "messages/evidence.hpp"
#include "messages/stored_upgrade.hpp"
#include "actors/scheduler.hpp"
#include "pipeline/bounded_cache.hpp"
#include "pipeline/content_hash.hpp"
#include "gpu/profiler/request_windows.hpp"
#include "cli/command_line.hpp"
#include "compiler/python_syntax.hpp"
#include "gpu/executor/eval_defaults.hpp"
#include "gpu/executor/gpu_assignment.hpp"
#include "gpu/executor/timing_slots.hpp"
#include "gpu/executor/sandbox_process.hpp"
#include "gpu/executor/scrub.hpp"
#include "gpu/profiler/trace_check.hpp"
#include "gpu/profiler/trace_profile.hpp"
#include "gpu/profiler/untrusted_file.hpp"
#include "messages/json.hpp"
#include "pipeline/episode_store.hpp"
#include "messages/ids.hpp"
#include "service/journal_writer.hpp"
#include "service/request_journal.hpp"
#include "service/eval_api.hpp"
#include "service/request_table.hpp"
#include "service/serve_metrics.hpp"
#include "pipeline/summary.hpp"
#include "pipeline/task_loader.hpp"
#include "tests/test_support.hpp"

namespace kgym::test {
namespace {

TEST(Json, RoundTripsWithProtoFieldNames) {
  ExecResult r;
  r.set_request_id("r1");
  r.set_verdict(HACKED);
  r.mutable_candidate_time()->set_median_ms(1.5);
  auto* e = r.add_evidence();
  e->set_kind(NO_GENERATED_KERNEL);
  std::string json = to_json(r);
  EXPECT_NE(json.find("\"request_id\":\"r1\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"verdict\":\"HACKED\""), std::string::npos) << json;
  ExecResult back;
  ASSERT_EQ(from_json(json, &back), "");
  EXPECT_EQ(back.candidate_time().median_ms(), 1.5);
  EXPECT_EQ(back.evidence(0).kind(), NO_GENERATED_KERNEL);
  // The judge's frames name a kind in lower case; a name the schema lacks makes the frame bad.
  ExecResult judged;
  ASSERT_EQ(from_json(R"({"evidence":[{"kind":"cached_output","detail":"d","source":"judge"}]})", &judged), "");
  EXPECT_EQ(judged.evidence(0).kind(), CACHED_OUTPUT);
  EXPECT_NE(from_json(R"({"evidence":[{"kind":"cached_outptu"}]})", &judged), "");
}

// An answer stored before the schema typed Evidence.kind (a string under field 1) reads back typed.
TEST(StoredUpgrade, EvidenceKindWrittenAsAStringReadsBackTyped) {
  ExecResult old;
  old.add_evidence()->set_legacy_kind("trace_forged");
  old.add_evidence()->set_legacy_kind("no_such_kind");
  ExecResult read;
  ASSERT_TRUE(read.ParseFromString(old.SerializeAsString()));
  upgrade_stored(&read);
  EXPECT_EQ(read.evidence(0).kind(), TRACE_FORGED);
  EXPECT_EQ(read.evidence(1).kind(), EVIDENCE_KIND_UNSPECIFIED);
  EXPECT_TRUE(read.evidence(0).legacy_kind().empty());
}

TEST(StoredUpgrade, FailedPhaseWrittenAsAStringReadsBackTyped) {
  ExecResult old;
  old.set_legacy_failed_phase("correctness");
  ExecResult read;
  ASSERT_TRUE(read.ParseFromString(old.SerializeAsString()));
  upgrade_stored(&read);
  EXPECT_EQ(read.failed_phase(), PHASE_CORRECTNESS);
  EXPECT_TRUE(read.legacy_failed_phase().empty());
  old.set_legacy_failed_phase("no_such_phase");
  ASSERT_TRUE(read.ParseFromString(old.SerializeAsString()));
  upgrade_stored(&read);
  EXPECT_EQ(read.failed_phase(), EVAL_PHASE_UNSPECIFIED);
  EXPECT_EQ(phase_name(PHASE_CORRECTNESS), "correctness");  // the judge's name for it
}

// Trials and launch records stored when the mode was a string ("train", "eval") read back typed.
TEST(StoredUpgrade, ModesWrittenAsStringsReadBackTyped) {
  Episode old;
  ExecResult* result = old.add_turns()->mutable_result();
  result->add_trials()->set_legacy_mode("train");
  result->add_trials()->set_legacy_mode("eval");
  result->add_trials()->set_legacy_mode("sideways");
  result->add_launches()->set_legacy_mode("eval");
  Episode read;
  ASSERT_TRUE(read.ParseFromString(old.SerializeAsString()));
  upgrade_stored(&read);
  const ExecResult& r = read.turns(0).result();
  EXPECT_EQ(r.trials(0).mode(), MODE_TRAIN);
  EXPECT_EQ(r.trials(1).mode(), MODE_EVAL);
  EXPECT_EQ(r.trials(2).mode(), FORWARD_MODE_UNSPECIFIED);
  EXPECT_EQ(r.launches(0).mode(), MODE_EVAL);
  EXPECT_TRUE(r.trials(0).legacy_mode().empty());
  EXPECT_TRUE(r.launches(0).legacy_mode().empty());
  // The judge's frames name the mode as the schema does.
  ExecResult judged;
  ASSERT_EQ(from_json(R"({"trials":[{"mode":"MODE_EVAL"}],"launches":[{"mode":"MODE_TRAIN"}]})", &judged), "");
  EXPECT_EQ(judged.trials(0).mode(), MODE_EVAL);
  EXPECT_EQ(judged.launches(0).mode(), MODE_TRAIN);
}

TEST(Json, RejectsUnknownFieldsAndSaysWhich) {
  ExecResult r;
  std::string error = from_json(R"({"request_id":"x","speedupp":2})", &r);
  EXPECT_NE(error.find("speedupp"), std::string::npos) << error;
}

TEST(Json, SetsOneFieldFromNameEqualsValue) {
  EvalOptions o;
  o.set_correctness_trials(3);
  EXPECT_EQ(set_field("batch_memory_mb=16384", &o), "");
  EXPECT_EQ(o.batch_memory_mb(), 16384);
  EXPECT_EQ(set_field("min_timed_s=0.25", &o), "");
  EXPECT_DOUBLE_EQ(o.min_timed_s(), 0.25);
  EXPECT_EQ(set_field("precision=BF16", &o), "");  // an enum by its name, unquoted
  EXPECT_EQ(o.precision(), BF16);
  EXPECT_EQ(set_field("no_hacking_check=true", &o), "");
  EXPECT_TRUE(o.no_hacking_check());
  EXPECT_EQ(o.correctness_trials(), 3);  // the rest stays
  std::string before = o.SerializeAsString();
  EXPECT_NE(set_field("batch_memory=1", &o).find("no field 'batch_memory'"), std::string::npos);
  EXPECT_NE(set_field("correctness_trials=many", &o), "");
  EXPECT_NE(set_field("=3", &o), "");
  EXPECT_NE(set_field("seed", &o), "");
  EXPECT_EQ(o.SerializeAsString(), before);  // unchanged on error
  Task t;
  EXPECT_EQ(set_field("id=a \"quoted\" name", &t), "");  // not JSON: taken as text
  EXPECT_EQ(t.id(), "a \"quoted\" name");
}

// The bulk reader of trace records reads what from_json reads, as strictly.
TEST(Json, RecordReaderAgreesWithFromJson) {
  const std::string line =
      R"({"seq":35,"kernel":{"start_ns":1795491581053217631,"end_ns":"1795491581055920327","stream":7,)"
      R"("device":0,"correlation":1,"grid":[32,32,1],"block":[128,1,1],"cbid":100430,"generated":true,)"
      R"("name":"bias_relu_kernel","phase":{"kind":2,"rep":0},"launcher":"/x/__triton_launcher.so"}})";
  TraceRecord fast, slow;
  ASSERT_EQ(from_json_record(line, &fast), "");
  ASSERT_EQ(from_json(line, &slow), "");
  EXPECT_EQ(fast.SerializeAsString(), slow.SerializeAsString());
  EXPECT_EQ(fast.kernel().end_ns(), 1795491581055920327u);  // a 64-bit integer written as a string
  EXPECT_EQ(fast.kernel().grid_size(), 3);
  for (const char* bad : {R"({"seq":1,"phsae":"train"})", R"({"seq":"one"})", R"({"seq":-1})", R"([1,2])",
                          R"({"seq":)"}) {
    TraceRecord r;
    EXPECT_NE(from_json_record(bad, &r), "") << bad;
    EXPECT_NE(from_json(bad, &r), "") << bad;
  }
  for (const char* bad : {R"({"kernel":{"grid":7}})", R"({"kernel":{"generated":"yes"}})"}) {
    TraceRecord r;  // Protobuf's parser lets these pass; a trace line never has them
    EXPECT_NE(from_json_record(bad, &r), "") << bad;
  }
  ExecResult result;  // names by the JSON mapping too, enums by name
  ASSERT_EQ(from_json_record(R"({"requestId":"r","verdict":"HACKED","speedup":1.5})", &result), "");
  EXPECT_EQ(result.request_id(), "r");
  EXPECT_EQ(result.verdict(), HACKED);
  EXPECT_EQ(result.speedup(), 1.5);
}

TEST(TaskLoader, LoadsBuiltInTaskWithMetadata) {
  Task t = load_task(source_path("tasks/gelu_scale_residual"));
  EXPECT_EQ(t.id(), "gelu_scale_residual");
  EXPECT_EQ(t.level(), 1);
  EXPECT_EQ(t.cpu_sizes().at("dim"), 1024);
  EXPECT_NE(t.source().find("class Model"), std::string::npos);
}

TEST(TaskLoader, LoadsABareKernelBenchFileAndLevelDirectory) {
  namespace fs = std::filesystem;
  fs::path level = fs::path(::testing::TempDir()) / "KernelBench" / "level1";
  fs::create_directories(level);
  std::ofstream(level / "19_ReLU.py") << read_text(source_path("tasks/softmax_rows/task.py"));
  std::ofstream(level / "notes.txt") << "not a task";
  auto found = find_tasks(level.string());
  ASSERT_EQ(found.size(), 1u);
  Task t = load_task(found[0]);
  EXPECT_EQ(t.id(), "19_ReLU");
  EXPECT_EQ(t.level(), 0);
  EXPECT_TRUE(t.cpu_sizes().empty());
}

TEST(TaskLoader, RejectsAFileThatIsNotAKernelBenchTask) {
  EXPECT_THROW(load_task(source_path("tests/hostile/raises.py")), std::runtime_error);
  EXPECT_THROW(load_task(source_path("no/such/task")), std::runtime_error);
}

TEST(TaskLoader, BuiltInSuiteHasTenTasksEachWithCandidates) {
  auto tasks = find_tasks(source_path("tasks"));
  EXPECT_GE(tasks.size(), 10u);
  for (const auto& t : tasks) {
    EXPECT_NO_THROW(load_task(t)) << t;
    EXPECT_GE(find_candidates(t).size(), 3u) << t;
  }
}

Episode episode_with(const std::string& id, int turns) {
  Episode e;
  e.set_episode_id(id);
  e.set_task_id("softmax_rows");
  for (int t = 0; t < turns; ++t) {
    Turn* turn = e.add_turns();
    turn->set_index(t);
    turn->set_response(std::string(100 * (t + 1), 'x'));
    turn->mutable_reward()->set_total(0.5 * t);
  }
  return e;
}

TEST(EpisodeStore, SurvivesARecordCutShortAndAppendsAfterIt) {
  std::string path = ::testing::TempDir() + "/episodes.pb";
  std::remove(path.c_str());
  {
    episode_store store(path);
    store.append(episode_with("e1", 1));
    store.append(episode_with("e2", 3));
  }
  auto whole = read_episodes(path);
  ASSERT_EQ(whole.episodes.size(), 2u);
  EXPECT_FALSE(whole.truncated);
  EXPECT_EQ(whole.episodes[1].turns(2).reward().total(), 1.0);
  // A kill in the middle of the third record leaves half of it on disk.
  std::string other = ::testing::TempDir() + "/one_record.pb";
  std::remove(other.c_str());
  episode_store(other).append(episode_with("e3", 2));
  std::string record = read_text(other);
  std::ofstream(path, std::ios::binary | std::ios::app) << record.substr(0, record.size() / 2);
  auto cut = read_episodes(path);
  EXPECT_EQ(cut.episodes.size(), 2u);
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.valid_bytes, whole.valid_bytes);
  {
    episode_store resumed(path);  // cuts the partial record off, then appends
    resumed.append(episode_with("e4", 1));
  }
  auto after = read_episodes(path);
  ASSERT_EQ(after.episodes.size(), 3u);
  EXPECT_FALSE(after.truncated);
  EXPECT_EQ(after.episodes[2].episode_id(), "e4");
}

// A commit survives the process (the server's SIGKILL); a synced commit is also in the
// database file proper, so it no longer depends on the log's pages in the kernel's cache.
TEST(RequestJournal, AKilledServerLosesNoCommitAndASyncedOneIsInTheDatabaseFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_test";
  fs::remove_all(dir);
  auto request = [](const std::string& id) {
    EvalRequest r;
    r.set_request_id(id);
    r.set_task_id("gelu_scale_residual");
    r.set_secret("kept-out");
    return r;
  };
  auto ids_in = [&](const fs::path& d) {
    std::vector<std::string> ids;
    for (auto& e : request_journal(d.string()).load()) {
      EXPECT_TRUE(e.request.secret().empty());
      ids.push_back(e.request.request_id() + (e.answer ? "+answer" : ""));
    }
    return ids;
  };
  auto copy_without_log = [&](const std::string& name) {  // the database file alone
    const fs::path copy = fs::path(::testing::TempDir()) / name;
    fs::remove_all(copy);
    fs::create_directories(copy);
    fs::copy_file(dir / "journal.sqlite", copy / "journal.sqlite");
    return copy;
  };
  const pid_t child = fork();
  if (child == 0) {
    request_journal journal(dir.string());
    journal.accepted(request("committed"));
    EvalResult answer;
    answer.set_request_id("committed");
    journal.answered(answer);
    journal.commit();
    journal.accepted(request("open"));  // never committed
    std::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(ids_in(copy_without_log("journal_unsynced")), std::vector<std::string>{});
  EXPECT_EQ(ids_in(dir), (std::vector<std::string>{"committed+answer"}));
  {
    request_journal journal(dir.string());
    journal.accepted(request("acknowledged"));
    journal.commit_synced();
    EXPECT_EQ(ids_in(copy_without_log("journal_synced")),
              (std::vector<std::string>{"committed+answer", "acknowledged"}));
  }
}

// The serve loop commits a batch once its window has passed, not every turn: before that another
// reader (a restart) sees nothing of it, after it everything; and it says when to come back.
TEST(RequestJournal, CommitsABatchOnceItsWindowHasPassed) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_window_test";
  fs::remove_all(dir);
  const auto window = std::chrono::milliseconds(200);
  {
    request_journal journal(dir.string(), std::chrono::milliseconds(0), window);
    EXPECT_EQ(journal.commit_when_due(), std::chrono::milliseconds::max());  // nothing waits
    EvalRequest request;
    request.set_request_id("a");
    journal.accepted(request);
    const auto wait = journal.commit_when_due();
    EXPECT_GT(wait, std::chrono::milliseconds(150));
    EXPECT_LE(wait, window + std::chrono::milliseconds(1));
    EXPECT_TRUE(request_journal(dir.string()).load().empty());
    std::this_thread::sleep_for(window);
    EXPECT_EQ(journal.commit_when_due(), std::chrono::milliseconds::max());
    auto seen = request_journal(dir.string()).load();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].request.request_id(), "a");
  }
  fs::remove_all(dir);
}

// An answer handed to ZeroMQ is journaled as delivered only after the grace: a server killed
// sooner (ZeroMQ's own queue may still hold it) delivers it again after its restart.
TEST(RequestJournal, MarksAnAnswerDeliveredOnlyAfterItsGrace) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_grace_test";
  fs::remove_all(dir);
  ReplyRoute route;
  route.add_frames("client");
  EvalRequest request;
  request.set_request_id("z");
  EvalResult answer;
  answer.set_request_id("z");
  const auto grace = std::chrono::milliseconds(300);
  {
    request_journal journal(dir.string(), grace);
    journal.accepted(request, &route);
    journal.answered(answer, true);
    journal.commit();
    // What a restart now (a SIGKILL just after the send) would read: the answer, undelivered.
    auto early = request_journal(dir.string(), grace).load();
    ASSERT_EQ(early.size(), 1u);
    EXPECT_TRUE(early[0].answer.has_value());
    EXPECT_FALSE(early[0].delivered);
    std::this_thread::sleep_for(grace + std::chrono::milliseconds(50));
    journal.commit();
    EXPECT_TRUE(request_journal(dir.string(), grace).load()[0].delivered);
  }
  fs::remove_all(dir);
  {
    request_journal journal(dir.string(), grace);
    journal.accepted(request, &route);
    journal.answered(answer, true);
    journal.settle_deliveries();  // a clean stop: no grace to wait for
    EXPECT_TRUE(request_journal(dir.string(), grace).load()[0].delivered);
  }
}

// Where a ZeroMQ answer goes is kept with the request; whether it got there with the answer. A
// journal made before those columns existed opens and reads its rows as delivered.
TEST(RequestJournal, KeepsEachZeroMqClientsRouteUntilItsAnswerIsDelivered) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_route_test";
  fs::remove_all(dir);
  ReplyRoute route;
  route.add_frames(std::string("kgym-client-\0\x01", 14));
  route.set_json(true);
  EvalRequest over_zmq, over_http;
  over_zmq.set_request_id("z");
  over_http.set_request_id("h");
  EvalResult answer;
  answer.set_request_id("z");
  {
    request_journal journal(dir.string());
    journal.accepted(over_zmq, &route);
    journal.accepted(over_http);
    journal.answered(answer, false);
    journal.commit();
  }
  {
    request_journal journal(dir.string(), std::chrono::milliseconds(0));
    auto entries = journal.load();
    ASSERT_EQ(entries.size(), 2u);
    ASSERT_TRUE(entries[0].route.has_value());
    EXPECT_EQ(entries[0].route->SerializeAsString(), route.SerializeAsString());
    EXPECT_FALSE(entries[0].delivered);
    EXPECT_FALSE(entries[1].route.has_value());
    journal.delivered("z");
    journal.commit();
    EXPECT_TRUE(journal.load()[0].delivered);
  }
  const fs::path old = fs::path(::testing::TempDir()) / "journal_old_schema";
  fs::remove_all(old);
  fs::create_directories(old);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((old / "journal.sqlite").c_str(), &db), SQLITE_OK);
  const std::string bytes = answer.SerializeAsString();
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE requests (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
                         "request BLOB NOT NULL, answer BLOB, accepted_at REAL, answered_at REAL); "
                         "INSERT INTO requests (id, request, answer) VALUES ('z', x'0a017a', x'0a017a')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto entries = request_journal(old.string()).load();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].request.request_id(), "z");
  EXPECT_FALSE(entries[0].route.has_value());
  EXPECT_TRUE(entries[0].delivered);
}

// Answers and delivery marks are rows of their own (appended, nothing rewritten): a request
// accepted by an earlier kgym (its row's own answer columns) and answered by this one is
// undelivered until its mark; compaction forgets answered requests older than `keep`, with
// their answers and marks, and keeps the unanswered.
TEST(RequestJournal, AnswersAndMarksOfTheirOwnLoadAndCompactWithTheirRequests) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_tables_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "journal.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE requests (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
                         "request BLOB NOT NULL, answer BLOB, accepted_at REAL, answered_at REAL, route BLOB, "
                         "delivered INTEGER); "
                         "INSERT INTO requests (id, request) VALUES ('old', x'0a036f6c64')",  // accepted, unanswered
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto answer_of = [](const std::string& id) {
    EvalResult a;
    a.set_request_id(id);
    a.mutable_result()->set_verdict(OK);
    return a;
  };
  auto request_of = [](const std::string& id) {
    EvalRequest r;
    r.set_request_id(id);
    return r;
  };
  const auto grace = std::chrono::milliseconds(60000);
  {
    request_journal journal(dir.string(), grace);
    journal.answered(answer_of("old"), true);  // its mark waits for the grace
    journal.accepted(request_of("new"));
    journal.accepted(request_of("open"));
    journal.answered(answer_of("new"), false);
    journal.answered(answer_of("never-accepted"), true);  // nothing to attach it to
    journal.commit();
    auto entries = journal.load();
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_EQ(entries[0].request.request_id(), "old");
    ASSERT_TRUE(entries[0].answer.has_value());
    EXPECT_EQ(entries[0].answer->result().verdict(), OK);
    EXPECT_FALSE(entries[0].delivered);  // not its NULL column's "delivered": its answer is new
    EXPECT_TRUE(entries[1].answer.has_value());
    EXPECT_FALSE(entries[1].delivered);
    EXPECT_FALSE(entries[2].answer.has_value());
    journal.delivered("new");
    journal.settle_deliveries();
    entries = journal.load();
    EXPECT_TRUE(entries[0].delivered);
    EXPECT_TRUE(entries[1].delivered);
    EXPECT_EQ(journal.compact(std::chrono::seconds(3600)), 0);  // all answered just now
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(journal.compact(std::chrono::seconds(0)), 2);
    entries = journal.load();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].request.request_id(), "open");
    // An answer never marked delivered (its client gone): once compaction removed its row, a
    // late mark writes nothing (counted below).
    journal.accepted(request_of("gone"));
    journal.answered(answer_of("gone"), false);
    journal.commit();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(journal.compact(std::chrono::seconds(0)), 1);
    journal.delivered("gone");
    journal.settle_deliveries();
  }
  ASSERT_EQ(sqlite3_open((dir / "journal.sqlite").c_str(), &db), SQLITE_OK);
  auto count = [&](const char* sql) {
    sqlite3_stmt* statement = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &statement, nullptr);
    sqlite3_step(statement);
    const int n = sqlite3_column_int(statement, 0);
    sqlite3_finalize(statement);
    return n;
  };
  EXPECT_EQ(count("SELECT count(*) FROM answers"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM deliveries"), 0);
  sqlite3_close(db);
  fs::remove_all(dir);
}

// A request's seq may be given again once compaction removed every row that had it (the table
// keeps no AUTOINCREMENT counter: a page less in every commit); nothing of the removed request,
// its answer or a delivery mark still waiting for its grace, then reaches the new one.
TEST(RequestJournal, ASeqGivenAgainAfterCompactionInheritsNothing) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_seq_reuse_test";
  fs::remove_all(dir);
  EvalRequest first, second;
  first.set_request_id("first");
  second.set_request_id("second");
  EvalResult answer;
  answer.set_request_id("first");
  answer.mutable_result()->set_verdict(HACKED);
  {
    request_journal journal(dir.string(), std::chrono::milliseconds(60000));
    journal.accepted(first);
    journal.answered(answer, true);  // its delivery mark waits a minute
    journal.commit();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(journal.compact(std::chrono::seconds(0)), 1);
    journal.accepted(second);
    answer.set_request_id("second");
    answer.mutable_result()->set_verdict(OK);
    journal.answered(answer, false);  // answered, not handed to its client
    journal.settle_deliveries();  // the first's mark, due now
    const auto entries = journal.load();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].request.request_id(), "second");
    ASSERT_TRUE(entries[0].answer.has_value());
    EXPECT_EQ(entries[0].answer->result().verdict(), OK);
    EXPECT_FALSE(entries[0].delivered);  // a restart delivers it again
  }
  fs::remove_all(dir);
}

// The writer commits on its own thread: an answer's number is reported committed only once
// another reader (a restart) finds it, a synced commit waits for the accepted requests before
// it, and a stop leaves nothing posted behind, even inside the batch window.
TEST(JournalWriter, GivesAnAnswerBackOnlyOnceARestartWouldFindIt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_writer_test";
  fs::remove_all(dir);
  auto stored = [&] {
    std::map<std::string, bool> answered;  // id -> has its answer
    for (auto& e : request_journal(dir.string()).load())
      answered[e.request.request_id()] = e.answer.has_value();
    return answered;
  };
  EvalRequest request;
  request.set_request_id("a");
  ReplyRoute route;
  route.add_frames("client");
  EvalResult answer;
  answer.set_request_id("a");
  {
    request_journal journal(dir.string(), std::chrono::milliseconds(0), std::chrono::seconds(60));
    std::mutex commits_mutex;
    std::condition_variable committed;
    int commits = 0;
    journal_writer writer(journal, [&] {
      std::lock_guard<std::mutex> lock(commits_mutex);
      ++commits;
      committed.notify_all();
    });
    writer.accepted(request, route);
    EvalResult other;
    other.set_request_id("a2");
    writer.answered(answer, false);
    writer.answered(other, true);
    writer.flush();
    std::vector<std::string> given_back;
    for (int seen = 0; given_back.size() < 2;) {
      {
        std::unique_lock<std::mutex> lock(commits_mutex);
        ASSERT_TRUE(committed.wait_for(lock, std::chrono::seconds(5), [&] { return commits > seen; }))
            << "no commit reported in 5 s";
        seen = commits;
      }
      for (const auto& committed : writer.take_committed()) {
        given_back.push_back(committed.request_id());
        if (committed.request_id() == "a") {
          EXPECT_TRUE(stored()["a"]) << "given back before it was committed";
        }
      }
    }
    EXPECT_EQ(given_back, (std::vector<std::string>{"a", "a2"}));
    EXPECT_EQ(stored(), (std::map<std::string, bool>{{"a", true}}));  // a2 was never accepted: an answer alone
    EXPECT_TRUE(writer.take_committed().empty());  // nothing new
    request.set_request_id("b");
    writer.accepted(request, std::nullopt);  // the 60 s window would keep it back
    writer.commit_synced();
    EXPECT_EQ(stored(), (std::map<std::string, bool>{{"a", true}, {"b", false}}));
    request.set_request_id("c");
    request.mutable_task()->set_id("softmax_rows");  // as the server resolved it from its suite
    request.mutable_task()->set_source("class Model: pass");
    writer.accepted(request, std::nullopt, /*by_task_id=*/true);  // the server's own task: kept by its id
    request.set_request_id("d");
    request.mutable_task()->set_source("class Model: other = 1");
    writer.accepted(request, std::nullopt);  // a task of the client's own: kept whole
    writer.stop();
    EXPECT_EQ(stored(), (std::map<std::string, bool>{{"a", true}, {"b", false}, {"c", false}, {"d", false}}));
    std::map<std::string, bool> with_task;
    for (auto& e : journal.load())
      with_task[e.request.request_id()] = e.request.has_task();
    EXPECT_FALSE(with_task["c"]);
    EXPECT_TRUE(with_task["d"]);
  }
  fs::remove_all(dir);
}

// While the writer is idle, the API service commits a few answers on its own thread
// (commit_here): they come back committed (with the acceptances gathered before them), the
// writer reports no commit of its own; once the writer is stopping, nothing is committed here.
TEST(JournalWriter, CommitsHereOnlyWhileTheWriterIsIdle) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "journal_writer_here_test";
  fs::remove_all(dir);
  {
    request_journal journal(dir.string(), std::chrono::milliseconds(0), std::chrono::seconds(60));
    std::atomic<int> writer_commits{0};
    journal_writer writer(journal, [&] { ++writer_commits; });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!writer.idle() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(writer.idle()) << "the writer never waited for work";
    EvalRequest request;
    request.set_request_id("e");
    ReplyRoute route;
    route.add_frames("client");
    writer.accepted(request, route);
    EvalResult answer;
    answer.set_request_id("e");
    writer.answered(answer, false);
    auto committed = writer.commit_here();
    ASSERT_TRUE(committed.has_value());
    ASSERT_EQ(committed->size(), 1u);
    EXPECT_EQ((*committed)[0].request_id(), "e");
    auto entries = request_journal(dir.string()).load();  // what a restart would find, now
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_TRUE(entries[0].answer.has_value());
    EXPECT_TRUE(writer.take_committed().empty());  // not the writer's to give back again
    EXPECT_EQ(writer_commits.load(), 0);
    writer.stop();
    answer.set_request_id("f");
    writer.answered(answer, false);
    EXPECT_FALSE(writer.commit_here().has_value());  // stopped: its caller flushes as before
  }
  fs::remove_all(dir);
}

namespace {
ReplyRoute client_route(const std::string& name) {
  ReplyRoute r;
  r.add_frames(name);
  return r;
}
EvalResult answer_for(const std::string& id) {
  EvalResult a;
  a.set_request_id(id);
  return a;
}
}  // namespace

// Every program goes through one Python process; one that dies is started again.
TEST(PythonSyntax, OneParserProcessChecksEveryProgramAndComesBackIfKilled) {
  python_syntax_checker parser("python3");
  EXPECT_EQ(parser.error_of("class ModelNew:\n    pass\n"), "");
  const pid_t first = parser.pid();
  ASSERT_GT(first, 0);
  EXPECT_EQ(parser.error_of("class ModelNew:\n  def f(:\n"), "SyntaxError: invalid syntax (line 2)");
  EXPECT_EQ(parser.error_of(std::string("x = '\xff'\n")).rfind("ValueError: ", 0), 0u);  // not UTF-8
  EXPECT_EQ(parser.error_of("y = 1\n"), "");
  EXPECT_EQ(parser.pid(), first);  // the same process all along
  ::kill(first, SIGKILL);
  EXPECT_EQ(parser.error_of("def f(:\n"), "SyntaxError: invalid syntax (line 1)");
  EXPECT_NE(parser.pid(), first);
  python_syntax_checker missing("/nonexistent/python3");
  EXPECT_THROW(missing.error_of("x = 1\n"), std::runtime_error);
}

TEST(RequestTable, ARetryWaitsForTheFirstEvaluationAndIsMarkedDuplicate) {
  request_table table({});
  const auto t0 = std::chrono::steady_clock::time_point{};
  EXPECT_EQ(table.submit_zmq("a", client_route("c1")), request_table::seen::new_request);
  EXPECT_EQ(table.submit_zmq("a", client_route("c2")), request_table::seen::in_progress);
  EXPECT_EQ(table.submit_http("a"), request_table::seen::in_progress);
  EXPECT_EQ(table.submit_http("b"), request_table::seen::new_request);
  table.long_poll("a", "conn1", t0 + std::chrono::seconds(5));
  EXPECT_EQ(table.in_flight(), 2u);
  EXPECT_EQ(table.answer_of("a"), nullptr);
  auto waiting = table.finish(answer_for("a"), t0);
  ASSERT_EQ(waiting.zmq.size(), 2u);
  EXPECT_EQ(waiting.zmq[0].route.frames(0), "c1");
  EXPECT_FALSE(waiting.zmq[0].duplicate);
  EXPECT_EQ(waiting.zmq[1].route.frames(0), "c2");
  EXPECT_TRUE(waiting.zmq[1].duplicate);
  EXPECT_EQ(waiting.http, std::vector<std::string>{"conn1"});
  EXPECT_EQ(table.in_flight(), 1u);
  EXPECT_EQ(table.submit_zmq("a", client_route("c3")), request_table::seen::answered);
  ASSERT_NE(table.answer_of("a"), nullptr);
  EXPECT_EQ(table.answer_of("a")->request_id(), "a");
  EXPECT_TRUE(table.finish(answer_for("a"), t0).zmq.empty());  // a second answer changes nothing
  EXPECT_EQ(table.in_flight(), 1u);
  auto left = table.unfinished();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].first, "b");
}

TEST(RequestTable, AnswersAreForgottenByAgeAndByCountButNeverWhileInFlight) {
  request_table::limits limits;
  limits.keep = std::chrono::seconds(10);
  limits.max_answers = 2;
  request_table table(limits);
  const auto t0 = std::chrono::steady_clock::time_point{};
  for (const char* id : {"a", "b", "c", "d", "e"})
    table.submit_http(id);
  table.finish(answer_for("a"), t0);
  table.finish(answer_for("b"), t0 + std::chrono::seconds(1));
  table.finish(answer_for("c"), t0 + std::chrono::seconds(2));  // a third answer: the oldest goes
  EXPECT_FALSE(table.known("a"));
  EXPECT_TRUE(table.known("b"));
  EXPECT_TRUE(table.known("c"));
  EXPECT_EQ(table.answers_kept(), 2u);
  table.finish(answer_for("d"), t0 + std::chrono::seconds(12));  // b is 11 s old, c 10 s: kept
  EXPECT_FALSE(table.known("b"));
  EXPECT_TRUE(table.known("c"));
  EXPECT_TRUE(table.known("d"));
  EXPECT_TRUE(table.known("e"));  // in flight long past the limits: never forgotten
  EXPECT_EQ(table.size(), 3u);
}

TEST(RequestTable, LongPollsEndAtTheirDeadline) {
  request_table table({});
  const auto t0 = std::chrono::steady_clock::time_point{};
  table.submit_http("a");
  table.long_poll("a", "early", t0 + std::chrono::seconds(1));
  table.long_poll("a", "late", t0 + std::chrono::seconds(3));
  EXPECT_TRUE(table.expired_polls(t0).empty());
  auto expired = table.expired_polls(t0 + std::chrono::seconds(2));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], (std::pair<std::string, std::string>{"a", "early"}));
  EXPECT_EQ(table.finish(answer_for("a"), t0).http, std::vector<std::string>{"late"});
  EXPECT_TRUE(table.expired_polls(t0 + std::chrono::seconds(4)).empty());  // answered: not expired too
}

TEST(RequestTable, AnUndeliveredAnswerIsTriedAgainUntilItsLimit) {
  request_table::limits limits;
  limits.redeliver_every = std::chrono::milliseconds(500);
  limits.redeliver_for = std::chrono::seconds(1);
  request_table table(limits);
  const auto t0 = std::chrono::steady_clock::time_point{};
  table.redeliver_later(client_route("c"), answer_for("a"), t0);
  EXPECT_TRUE(table.due(t0 + std::chrono::milliseconds(499)).empty());
  auto due = table.due(t0 + std::chrono::milliseconds(500));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].answer.request_id(), "a");
  EXPECT_EQ(table.waiting_redelivery(), 0u);
  table.retry(due[0], t0 + std::chrono::milliseconds(500));  // failed again: in 500 ms once more
  EXPECT_TRUE(table.due(t0 + std::chrono::milliseconds(999)).empty());
  due = table.due(t0 + std::chrono::milliseconds(1000));
  ASSERT_EQ(due.size(), 1u);
  table.retry(due[0], t0 + std::chrono::milliseconds(1000));  // at its limit: given up
  EXPECT_EQ(table.waiting_redelivery(), 0u);
}

TEST(RequestTable, AfterARestartTheZeroMqClientWaitsAsIfItHadJustAsked) {
  request_table table({});
  const auto t0 = std::chrono::steady_clock::time_point{};
  table.restore_unfinished("z", client_route("c"));
  table.restore_unfinished("h", std::nullopt);
  table.restore_answer(answer_for("done"), t0);
  EXPECT_EQ(table.in_flight(), 2u);
  EXPECT_EQ(table.submit_zmq("done", client_route("c")), request_table::seen::answered);
  auto waiting = table.finish(answer_for("z"), t0);
  ASSERT_EQ(waiting.zmq.size(), 1u);
  EXPECT_FALSE(waiting.zmq[0].duplicate);
  EXPECT_TRUE(table.finish(answer_for("h"), t0).zmq.empty());
  EXPECT_EQ(table.in_flight(), 0u);
}

// The Prometheus text: counters by verdict (every verdict listed), a cumulative histogram of
// evaluation seconds, and the gauges of the status, exactly.
TEST(ServeMetrics, PrometheusTextCountsVerdictsAndBucketsWallTime) {
  serve_metrics m;
  for (double wall : {0.4, 1.5, 1.5, 700.0}) {
    ExecResult r;
    r.set_verdict(wall > 100 ? TIMEOUT : OK);
    r.set_wall_s(wall);
    m.evaluated(r);
  }
  ServeStatus status;
  status.mutable_scheduler()->set_queued(3);
  status.mutable_scheduler()->add_executors()->set_name("local#0");
  status.set_requests_in_flight(4);
  status.set_refused(2);
  status.set_answers_committed_at_once(5);
  status.set_answers_committed_by_writer(6);
  const std::string text = m.prometheus_text(status);
  for (const char* line :
       {"kgym_evaluations_total{verdict=\"OK\"} 3\n", "kgym_evaluations_total{verdict=\"TIMEOUT\"} 1\n",
        "kgym_evaluations_total{verdict=\"HACKED\"} 0\n", "kgym_evaluation_seconds_bucket{le=\"0.5\"} 1\n",
        "kgym_evaluation_seconds_bucket{le=\"1\"} 1\n", "kgym_evaluation_seconds_bucket{le=\"2\"} 3\n",
        "kgym_evaluation_seconds_bucket{le=\"600\"} 3\n", "kgym_evaluation_seconds_bucket{le=\"+Inf\"} 4\n",
        "kgym_evaluation_seconds_sum 703.4\n", "kgym_evaluation_seconds_count 4\n",
        "kgym_requests_refused_total 2\n", "# TYPE kgym_queue_depth gauge\nkgym_queue_depth 3\n",
        "kgym_requests_in_flight 4\n", "kgym_executors 1\n", "kgym_journal_answers_committed_total{thread=\"api\"} 5\n",
        "kgym_journal_answers_committed_total{thread=\"writer\"} 6\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  EXPECT_EQ(text.find("VERDICT_UNSPECIFIED"), std::string::npos);  // no evaluation is answered with it
}

TEST(Defaults, FillOnlyWhatIsUnset) {
  EvalOptions o;
  o.set_correctness_trials(7);
  EvalOptions cpu = with_defaults(o, CPU);
  EXPECT_EQ(cpu.correctness_trials(), 7);
  EXPECT_EQ(cpu.atol(), 1e-4);  // fp32 under KernelBench's tolerances
  EXPECT_EQ(cpu.rtol(), 1e-4);
  EXPECT_EQ(cpu.timing_reps(), 5);
  EXPECT_EQ(with_defaults(o, CUDA).timing_reps(), 1000);
  EXPECT_EQ(with_defaults(o, CUDA).batch_memory_mb(), 16384);
  EXPECT_EQ(cpu.batch_memory_mb(), 4096);
  o.set_atol(3e-3);  // set: kept, whatever the precision
  o.set_precision(BF16);
  EXPECT_EQ(with_defaults(o, CPU).atol(), 3e-3);
  EXPECT_EQ(with_defaults(o, CPU).rtol(), 1e-2);
}

TEST(Defaults, AnEnumAtItsZeroValueTakesTheDefaultAndASetOneIsKept) {
  EvalOptions o;
  EXPECT_EQ(with_defaults(o, CPU).placement(), PLACEMENT_KEPT);
  o.set_placement(PLACEMENT_REDRAWN);
  EXPECT_EQ(with_defaults(o, CUDA).placement(), PLACEMENT_REDRAWN);
  o.set_placement(PLACEMENT_KEPT);
  EXPECT_EQ(with_defaults(o, CUDA).placement(), PLACEMENT_KEPT);
}

TEST(Defaults, TimingStopsOnItsPrecisionOnTheGpuOnlyAndNeverBelowTheFloor) {
  EvalOptions o;
  EvalOptions cuda = with_defaults(o, CUDA), cpu = with_defaults(o, CPU);
  EXPECT_EQ(cuda.min_timed_s(), 0.25);
  EXPECT_EQ(cpu.min_timed_s(), 0.5);
  EXPECT_EQ(cuda.max_timed_s(), 1.0);
  EXPECT_EQ(cuda.timing_precision(), 0.001);
  EXPECT_EQ(cpu.timing_precision(), 0.0);  // the CPU's timing is a fixed span
  EXPECT_EQ(cpu.max_timed_s(), cpu.min_timed_s());
  o.set_min_timed_s(2.0);  // a floor above the GPU's default cap: the cap follows it
  EXPECT_EQ(with_defaults(o, CPU).max_timed_s(), 2.0);
  EXPECT_EQ(with_defaults(o, CUDA).max_timed_s(), 2.0);
}

TEST(Defaults, TolerancesPerPrecisionAndSet) {
  EXPECT_EQ(default_tolerance(FP32, KERNELBENCH_TOLERANCES), 1e-4);
  EXPECT_EQ(default_tolerance(FP16, KERNELBENCH_TOLERANCES), 1e-2);
  EXPECT_EQ(default_tolerance(BF16, KERNELBENCH_TOLERANCES), 1e-2);
  EXPECT_EQ(default_tolerance(FP32, DR_KERNEL_TOLERANCES), 1e-2);
  EXPECT_EQ(default_tolerance(BF16, DR_KERNEL_TOLERANCES), 1e-2);
  EXPECT_EQ(precision_named("bf16"), BF16);
  EXPECT_EQ(tolerance_set_named("dr_kernel"), DR_KERNEL_TOLERANCES);
  EXPECT_THROW(precision_named("fp8"), std::invalid_argument);
  EXPECT_THROW(tolerance_set_named("loose"), std::invalid_argument);
}

TEST(Defaults, PlacementsByTheirNamesAndNeverTheUnspecifiedOne) {
  EXPECT_EQ(placement_named("redrawn"), PLACEMENT_REDRAWN);
  EXPECT_EQ(placement_named("Kept"), PLACEMENT_KEPT);
  EXPECT_EQ(placement_named("checked"), PLACEMENT_CHECKED);
  EXPECT_THROW(placement_named("unspecified"), std::invalid_argument);
  EXPECT_THROW(placement_named("moved"), std::invalid_argument);
}

TEST(GpuAssignment, OneExecutorPerGpuNeverTwoOnOne) {
  EXPECT_EQ(executor_gpus(CUDA, 1, {}), (std::vector<int>{0}));  // one GPU: its candidates see no other
  EXPECT_EQ(executor_gpus(CUDA, 3, {}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(executor_gpus(CUDA, 0, {}), (std::vector<int>{}));  // workers only
  EXPECT_EQ(executor_gpus(CUDA, 1, {2, 5}), (std::vector<int>{2, 5}));  // --gpus replaces --executors
  EXPECT_EQ(executor_gpus(CPU, 2, {}), (std::vector<int>{-1, -1}));
  EXPECT_EQ(executor_gpus(CUDA, 2, {}, "4,6,7"), (std::vector<int>{4, 6}));  // the caller's choice kept
  EXPECT_EQ(executor_gpus(CUDA, 1, {}, "4,6,7"), (std::vector<int>{4}));    // the first the caller named
  EXPECT_EQ(executor_gpus(CUDA, 1, {}, "GPU-5f98"), (std::vector<int>{-1}));  // named by UUID: inherited as it is
  EXPECT_THROW(executor_gpus(CUDA, 3, {}, "4,6"), std::invalid_argument);
  EXPECT_THROW(executor_gpus(CUDA, 2, {}, "GPU-5f98,GPU-9740"), std::invalid_argument);
  executor_options exec;
  exec.launch.device = CUDA;
  exec.launch.python = "python3.x";
  const auto each = executors_on_gpus(exec, {6, 7});  // each with its GPU and its place
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(std::make_pair(each[0].launch.gpu, each[0].launch.timing_slot), std::make_pair(6, 0));
  EXPECT_EQ(std::make_pair(each[1].launch.gpu, each[1].launch.timing_slot), std::make_pair(7, 1));
  EXPECT_EQ(each[1].launch.python, "python3.x");
  EXPECT_EQ(gpu_list("0,1,3"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(gpu_list("7"), (std::vector<int>{7}));
  for (const char* bad : {"", "0,,1", "a", "1x", "-1", "0,0"})
    EXPECT_THROW(gpu_list(bad), std::invalid_argument) << bad;
}

// Two kgym processes on one host never take one timing slot: each claims the first slot no one
// else holds, and a slot is free again once its holder is gone.
TEST(TimingCores, EachProcessClaimsASlotNoOtherHolds) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "timing_slots_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<int> first, second;  // two holders (locks on separate open files conflict as between processes)
  EXPECT_EQ(claim_free_timing_slot(dir.string(), 8, &first), 0);
  EXPECT_EQ(claim_free_timing_slot(dir.string(), 8, &first), 1);
  EXPECT_EQ(claim_free_timing_slot(dir.string(), 8, &second), 2);
  ::close(first[0]);  // the holder of slot 0 ends
  EXPECT_EQ(claim_free_timing_slot(dir.string(), 8, &second), 0);
  EXPECT_EQ(claim_free_timing_slot(dir.string(), 3, &second), -1);  // 0-2 all held
  const pid_t child = ::fork();  // and another process sees them held
  if (child == 0) {
    std::vector<int> mine;
    ::_exit(claim_free_timing_slot(dir.string(), 8, &mine) == 3 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int fd : second) ::close(fd);
  ::close(first[1]);
  fs::remove_all(dir);
}

TEST(TimingCores, FromTheEndOfTheAllowedCoresPerGpuTheRunnersOnOne) {
  const std::vector<int> sixteen = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  EXPECT_EQ(timing_cores_for(sixteen, -1, ""), "14,15,15");
  EXPECT_EQ(timing_cores_for(sixteen, 0, ""), "14,15,15");
  EXPECT_EQ(timing_cores_for(sixteen, 3, ""), "8,9,9");
  EXPECT_EQ(timing_cores_for({2, 5, 7, 9, 11, 12}, 0, ""), "11,12,12");  // the allowed set, not 0..n-1
  EXPECT_EQ(timing_cores_for({0, 1, 2}, 0, ""), "");  // two other cores must remain
  EXPECT_EQ(timing_cores_for({0, 1, 2, 3}, 0, ""), "2,3,3");
  EXPECT_EQ(timing_cores_for(sixteen, 6, ""), "2,3,3");
  EXPECT_EQ(timing_cores_for(sixteen, 7, ""), "");  // GPU 7 would leave none
  EXPECT_EQ(timing_cores_for(sixteen, 0, "3,4,5"), "3,4,5");
  EXPECT_EQ(timing_cores_for(sixteen, 0, "none"), "");
  sandbox_launch second_of_6_and_7;  // kgym serve --gpus 6,7: by place, GPU 7 still gets cores
  second_of_6_and_7.gpu = 7;
  second_of_6_and_7.timing_slot = 1;
  EXPECT_EQ(timing_cores_for(sixteen, timing_slot_of(second_of_6_and_7), ""), "12,13,13");
  second_of_6_and_7.timing_slot = -1;  // no place given: by its index
  EXPECT_EQ(timing_cores_for(sixteen, timing_slot_of(second_of_6_and_7), ""), "");
  EXPECT_EQ(cores_besides({0, 1, 2, 3, 4}, {3, 4, 4}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(cores_besides({2, 5, 7}, {}), (std::vector<int>{2, 5, 7}));
  EXPECT_EQ(cores_besides({2, 5}, {5, 2, 9}), (std::vector<int>{}));
}

TEST(EvaluationKey, CoversWhatDecidesTheResultAndNothingElse) {
  ExecRequest base;
  base.mutable_task()->set_id("client_task");
  base.mutable_task()->set_source("class Model: pass\n");
  (*base.mutable_task()->mutable_cpu_sizes())["batch_size"] = 16;
  (*base.mutable_task()->mutable_cpu_sizes())["dim"] = 64;
  base.mutable_candidate()->set_source("class ModelNew: pass\n");
  base.set_device(CUDA);
  base.mutable_options()->set_atol(1e-2);
  const std::string key = evaluation_key(base);
  EXPECT_EQ(key.rfind("client_task/" + content_hash("class ModelNew: pass\n") + "/", 0), 0u) << key;

  auto differs = [&](auto change) {
    ExecRequest other = base;
    change(other);
    return evaluation_key(other) != key;
  };
  EXPECT_TRUE(differs([](ExecRequest& r) { r.mutable_task()->set_source("class Model: pass  # other\n"); }));
  EXPECT_TRUE(differs([](ExecRequest& r) { (*r.mutable_task()->mutable_cpu_sizes())["dim"] = 65; }));
  EXPECT_TRUE(differs([](ExecRequest& r) { r.mutable_candidate()->set_source("class ModelNew: pass  # b\n"); }));
  EXPECT_TRUE(differs([](ExecRequest& r) { r.set_device(CPU); }));
  EXPECT_TRUE(differs([](ExecRequest& r) { r.mutable_options()->set_atol(1e-4); }));
  EXPECT_TRUE(differs([](ExecRequest& r) { r.mutable_task()->set_id("other_task"); }));
  // Where a task was read from, its description and the request's ids decide nothing.
  EXPECT_FALSE(differs([](ExecRequest& r) { r.mutable_task()->set_path("/elsewhere/task.py"); }));
  EXPECT_FALSE(differs([](ExecRequest& r) { r.mutable_task()->set_description("another text"); }));
  EXPECT_FALSE(differs([](ExecRequest& r) { r.set_request_id("r2"); r.mutable_candidate()->set_id("c2"); }));
  EXPECT_FALSE(differs([](ExecRequest& r) {  // the same map, entries added in the other order
    r.mutable_task()->clear_cpu_sizes();
    (*r.mutable_task()->mutable_cpu_sizes())["dim"] = 64;
    (*r.mutable_task()->mutable_cpu_sizes())["batch_size"] = 16;
  }));
}

// A command line is declared once: CLI11 parses it (types and choices checked, unknown options
// refused), the help is made of the same declarations, and a --config file and the environment
// fill what the line leaves out.
cli::command_line demo_command_line() {
  cli::command_line c("demo", "[options] DIR", "A demo.\n");
  c.repeated("task", "PATH", "a task")
      .repeated("candidate", "FILE", "a candidate")
      .flag("json", "as JSON")
      .whole("seed", "N", "the seed")
      .number("rate", "X", "a rate")
      .choice<Device>("device", "where it runs")
      .env("KGYM_DEMO_DEVICE")
      .positional("DIR", "a directory")
      .config_file();
  return c;
}

TEST(CommandLine, ParsesChecksAndDescribesItsOptions) {
  auto a = demo_command_line().parse({"--task", "t", "--candidate=a.py", "--candidate", "b.py", "--json", "pos",
                                      "--seed", "9007199254740993", "--device", "CUDA"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->get("task"), "t");
  EXPECT_EQ(a->all("candidate"), (std::vector<std::string>{"a.py", "b.py"}));
  EXPECT_TRUE(a->has("json"));
  EXPECT_FALSE(a->has("rate"));
  EXPECT_EQ(a->positional(), std::vector<std::string>{"pos"});
  // Seeds are whole numbers, read exactly: 2^53 + 1 survives (a double rounds it).
  EXPECT_EQ(a->whole("seed", 0), 9007199254740993ULL);
  EXPECT_EQ(cli::choice<Device>(*a, "device"), CUDA);
  for (const std::vector<std::string>& refused :
       {std::vector<std::string>{"--nope"}, {"--task"}, {"--rate", "x3"}, {"--seed", "2.5"}, {"--seed", "-1"},
        {"--seed", "18446744073709551616"}, {"--seed", "0x10"}, {"--device", "tpu"}}) {
    try {
      demo_command_line().parse(refused);
      ADD_FAILURE() << "accepted: " << refused[0] << " " << (refused.size() > 1 ? refused[1] : "");
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("(see kgym demo --help)"), std::string::npos) << e.what();
    }
  }
  // The help is the declarations.
  const std::string help = demo_command_line().help();
  EXPECT_EQ(help.rfind("usage: kgym demo [options] DIR\n\nA demo.\n", 0), 0u) << help;
  for (const char* line : {"  --seed N               the seed\n", "  --device cpu|cuda      where it runs "
                           "($KGYM_DEMO_DEVICE when not given)\n", "  --task PATH            a task (repeatable)\n",
                           "  DIR                    a directory\n"})
    EXPECT_NE(help.find(line), std::string::npos) << line << " not in:\n" << help;
  testing::internal::CaptureStdout();
  EXPECT_FALSE(demo_command_line().parse({"--help"}).has_value());
  EXPECT_EQ(testing::internal::GetCapturedStdout(), help);
  // What the line leaves out: the environment, then the --config file; the line wins.
  const std::string config = ::testing::TempDir() + "/demo.toml";
  std::ofstream(config) << "seed = 5\ntask = [\"x\", \"y\"]\njson = true\n";
  ::setenv("KGYM_DEMO_DEVICE", "cpu", 1);
  auto filled = demo_command_line().parse({"--config", config, "--seed", "7"});
  ::unsetenv("KGYM_DEMO_DEVICE");
  ASSERT_TRUE(filled.has_value());
  EXPECT_EQ(filled->whole("seed", 0), 7u);
  EXPECT_EQ(filled->all("task"), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(filled->has("json"));
  EXPECT_EQ(cli::choice<Device>(*filled, "device"), CPU);
}

TEST(Summary, NamesVerdictSpeedupAndEvidence) {
  ExecResult r;
  r.set_candidate_id("fused");
  r.set_verdict(OK);
  r.set_speedup(1.5);
  std::string line = summary_line(r);
  EXPECT_NE(line.find("OK"), std::string::npos);
  EXPECT_NE(line.find("1.500x ("), std::string::npos);  // no error known: none printed
  r.set_speedup_rse(0.226);
  EXPECT_NE(summary_line(r).find("speedup 1.500x +-22.6% (ref"), std::string::npos);
  r.mutable_profile()->set_coverage(0.25);
  EXPECT_NE(summary_line(r).find("coverage 0.25"), std::string::npos);
  for (double ms : {25.0, 25.1, 33.0, 33.1}) {
    r.add_reference_batches_ms(25.0);
    r.add_candidate_batches_ms(ms);
  }
  r.set_reference_batches_timed(4);
  r.set_candidate_batches_timed(4);
  EXPECT_EQ(summary_line(r).find("fast mode"), std::string::npos);  // every batch timed: nothing to say
  r.set_candidate_batches_timed(2);
  EXPECT_NE(summary_line(r).find("fast mode: ref 4 of 4 batches, cand 2 of 4"), std::string::npos);
  r.set_wall_s(3.84);
  EXPECT_NE(summary_line(r).find("[0/0 trials, 3.8 s]"), std::string::npos);  // the CPU: no GPU memory
  r.set_peak_device_memory_mb(52838.4);
  EXPECT_NE(summary_line(r).find("[0/0 trials, 3.8 s, GPU memory 51.6 GiB]"), std::string::npos);
  r.set_verdict(HACKED);
  r.add_evidence()->set_kind(CACHED_OUTPUT);
  EXPECT_NE(summary_line(r).find("cached_output"), std::string::npos);
}

TEST(CafTypes, ProtobufMessagesSurviveCafSerialization) {
  caf::actor_system_config cfg;
  add_message_types(cfg);
  caf::actor_system system{cfg};
  ExecRequest request;
  request.set_request_id("abc");
  request.mutable_task()->set_source("class Model: pass");
  std::vector<char> buf;
  caf::binary_serializer sink{system, buf};
  ASSERT_FALSE(sink(request));
  ExecRequest back;
  caf::binary_deserializer source{system, buf};
  ASSERT_FALSE(source(back));
  EXPECT_EQ(back.request_id(), "abc");
  EXPECT_EQ(back.task().source(), "class Model: pass");
}

// What of kgym's caller's environment reaches the sandbox: a fixed list, prefixes, and the
// names configured; never a credential.
TEST(SandboxEnvironment, PassesOnlyWhatIsNamed) {
  for (const char* name : {"PATH", "HOME", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                           "TRITON_CACHE_DIR", "LD_LIBRARY_PATH", "VIRTUAL_ENV"})
    EXPECT_TRUE(sandbox_environment_passes(name, "")) << name;
  for (const char* name : {"AWS_SECRET_ACCESS_KEY", "KGYM_API_SECRET", "HF_TOKEN", "OPENAI_API_KEY", "PYTHONPATH",
                           "LD_PRELOAD", "PATHX", "SSH_AUTH_SOCK", "CUDA_INJECTION64_PATH"})
    EXPECT_FALSE(sandbox_environment_passes(name, "")) << name;
  EXPECT_TRUE(sandbox_environment_passes("HF_HOME", "WANDB_MODE,HF_HOME"));
  EXPECT_TRUE(sandbox_environment_passes("WANDB_MODE", "WANDB_MODE,HF_HOME"));
  EXPECT_FALSE(sandbox_environment_passes("HF", "WANDB_MODE,HF_HOME"));  // whole names only
  EXPECT_FALSE(sandbox_environment_passes("", ",,"));
}

// A CUDA sandbox sees one GPU whatever its caller made visible.
TEST(SandboxEnvironment, ACudaSandboxSeesOneGpu) {
  EXPECT_EQ(sandbox_visible_gpu(3, "3,0"), "3");
  EXPECT_EQ(sandbox_visible_gpu(-1, "GPU-5f98,GPU-9740"), "GPU-5f98");  // by UUID: the first named
  EXPECT_EQ(sandbox_visible_gpu(-1, "MIG-1a2b"), "MIG-1a2b");
  EXPECT_EQ(sandbox_visible_gpu(-1, ""), "0");
  EXPECT_EQ(sandbox_visible_gpu(-1, ",1"), "0");
}

// Messages are bounded and carry no secret kgym knows.
TEST(Scrub, RedactsSecretValuesAndBoundsTheText) {
  EXPECT_EQ(scrub("key=abc123xyz; again abc123xyz.", {"abc123xyz"}, 100), "key=[redacted]; again [redacted].");
  EXPECT_EQ(scrub("0123456789", {}, 6), "...789");
  EXPECT_EQ(scrub("unchanged", {""}, 100), "unchanged");
  std::string env_store[] = {"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI", "HF_TOKEN=hf_abcdefgh", "PATH=/usr/bin:/bin",
                             "MY_PASS=hunter2hunter2", "KGYM_API_SECRET=short", "db_password=letmein99"};
  std::vector<char*> env;
  for (auto& e : env_store)
    env.push_back(e.data());
  env.push_back(nullptr);
  EXPECT_EQ(secret_values(env.data(), "MY_PASS"),
            (std::vector<std::string>{"wJalrXUtnFEMI", "hf_abcdefgh", "hunter2hunter2", "letmein99"}));
  ExecResult r;
  r.set_message("RuntimeError: hf_abcdefgh");
  r.add_evidence()->set_detail("saw hf_abcdefgh");
  r.add_trials()->set_message("hf_abcdefgh");
  r.set_log(std::string(70000, 'x') + "hf_abcdefgh");
  scrub_result(&r, {"hf_abcdefgh"});
  EXPECT_EQ(r.message(), "RuntimeError: [redacted]");
  EXPECT_EQ(r.evidence(0).detail(), "saw [redacted]");
  EXPECT_EQ(r.trials(0).message(), "[redacted]");
  EXPECT_EQ(r.log().size(), 65536u);
  EXPECT_EQ(r.log().substr(r.log().size() - 10), "[redacted]");
}

// An executor that answers each request 300 ms after it arrived, in arrival order, and
// records the order requests reached it.
using answer_atom = caf::atom_constant<caf::atom("answer")>;

struct slow_executor_state {
  std::deque<std::pair<caf::response_promise, std::string>> waiting;
};

caf::behavior slow_executor(caf::stateful_actor<slow_executor_state>* self,
                            std::shared_ptr<std::vector<std::string>> seen, std::shared_ptr<std::mutex> lock) {
  return {
      [=](const ExecRequest& request) -> caf::response_promise {
        {
          std::lock_guard<std::mutex> guard(*lock);
          seen->push_back(request.request_id());
        }
        self->state.waiting.emplace_back(self->make_response_promise(), request.request_id());
        self->delayed_send(self, std::chrono::milliseconds(300), answer_atom::value);
        return self->state.waiting.back().first;
      },
      [=](answer_atom) {
        auto [promise, id] = std::move(self->state.waiting.front());
        self->state.waiting.pop_front();
        ExecResult r;
        r.set_request_id(id);
        r.set_verdict(OK);
        promise.deliver(r);
      },
  };
}

// `c` with kgym's message types, for an actor system built from it in a fixture's initializer.
caf::actor_system_config& with_message_types(caf::actor_system_config& c) {
  add_message_types(c);
  return c;
}

// A scheduler with one slow_executor, whose order of requests `seen` records.
class SchedulerWithASlowExecutor : public ::testing::Test {
 protected:
  SchedulerWithASlowExecutor() : system(with_message_types(cfg)) {}
  ~SchedulerWithASlowExecutor() override {
    self->send_exit(scheduler, caf::exit_reason::user_shutdown);
    self->send_exit(executor, caf::exit_reason::user_shutdown);
  }
  void start(const scheduler_options& options) { scheduler = spawn_scheduler(system, {executor}, options); }

  caf::actor_system_config cfg;
  caf::actor_system system;
  std::shared_ptr<std::vector<std::string>> seen = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::mutex> lock = std::make_shared<std::mutex>();
  gpu_executor_actor executor = caf::actor_cast<gpu_executor_actor>(system.spawn(slow_executor, seen, lock));
  scheduler_actor scheduler;
  caf::scoped_actor self{system};
};

// A request that builds CUDA extensions goes to a busy executor ahead of its turn (its build
// workers compile while the device evaluates); other requests wait for an idle one.
TEST_F(SchedulerWithASlowExecutor, SendsRequestsWithExtensionsAheadToBuild) {
  start(scheduler_options{false, {}});
  const std::string plain = "class ModelNew: pass";
  const std::string cuda = "from torch.utils.cpp_extension import load_inline\nclass ModelNew: pass";
  std::vector<std::pair<std::string, std::string>> sent = {{"plain0", plain}, {"plain1", plain}, {"cuda2", cuda},
                                                           {"cuda3", cuda}};
  for (const auto& [id, source] : sent) {
    ExecRequest request;
    request.set_request_id(id);
    request.mutable_candidate()->set_source(source + "  # " + id);
    self->send(scheduler, request);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  {
    std::lock_guard<std::mutex> guard(*lock);
    EXPECT_EQ(*seen, (std::vector<std::string>{"plain0", "cuda2", "cuda3"}));
  }
  std::set<std::string> answered;
  for (size_t i = 0; i < sent.size(); ++i)
    self->receive([&](const ExecResult& r) { answered.insert(r.request_id()); },
                  caf::after(std::chrono::seconds(10)) >> [&] { FAIL() << "no answer"; });
  EXPECT_EQ(answered.size(), sent.size());
  std::lock_guard<std::mutex> guard(*lock);
  EXPECT_EQ(seen->back(), "plain1");  // placed once the executor was idle again
}

TEST(BoundedCache, ForgetsTheOldestInsertedBeyondItsCapacity) {
  bounded_cache<int> cache(2);
  cache.put("a", 1);
  cache.put("b", 2);
  cache.put("a", 10);  // replaced in place: still the oldest
  ASSERT_NE(cache.find("a"), nullptr);
  EXPECT_EQ(*cache.find("a"), 10);
  cache.put("c", 3);
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_EQ(*cache.find("b"), 2);
  EXPECT_EQ(*cache.find("c"), 3);
  EXPECT_EQ(cache.size(), 2u);
}

// The evaluation cache holds at most cache_limit results: past it the oldest is evaluated again.
TEST_F(SchedulerWithASlowExecutor, TheEvaluationCacheIsBounded) {
  scheduler_options options{true, {}};
  options.cache_limit = 2;
  start(options);
  auto evaluate = [&](const std::string& id, const std::string& program) {
    ExecRequest request;
    request.set_request_id(id);
    request.mutable_candidate()->set_source(program);
    bool cached = false;
    self->request(scheduler, std::chrono::seconds(10), request)
        .receive([&](const ExecResult& r) { cached = r.from_cache(); },
                 [&](const caf::error& e) { ADD_FAILURE() << system.render(e); });
    return cached;
  };
  EXPECT_FALSE(evaluate("1", "class ModelNew: a = 1"));
  EXPECT_FALSE(evaluate("2", "class ModelNew: a = 2"));
  EXPECT_TRUE(evaluate("3", "class ModelNew: a = 1"));  // within the limit: from the cache
  EXPECT_FALSE(evaluate("4", "class ModelNew: a = 3"));  // a third result: the first goes
  EXPECT_FALSE(evaluate("5", "class ModelNew: a = 1"));
  SchedulerStatus status;
  self->request(scheduler, std::chrono::seconds(10), status_atom::value)
      .receive([&](const SchedulerStatus& s) { status = s; }, [&](const caf::error& e) { ADD_FAILURE(); });
  EXPECT_EQ(status.cached(), 2);
  ASSERT_EQ(status.executors_size(), 1);
  EXPECT_EQ(status.executors(0).name(), "local#0");
  EXPECT_EQ(status.queued(), 0);
  std::lock_guard<std::mutex> guard(*lock);
  EXPECT_EQ(*seen, (std::vector<std::string>{"1", "2", "4", "5"}));
}

// An executor that takes every request and never answers (a worker whose link is gone but
// not yet noticed).
gpu_executor_actor::behavior_type black_hole(gpu_executor_actor::pointer self,
                                             std::shared_ptr<std::vector<caf::typed_response_promise<ExecResult>>> held,
                                             std::shared_ptr<std::vector<std::string>> told_to_stop = nullptr) {
  return {[=](const ExecRequest&) -> caf::typed_response_promise<ExecResult> {
            held->push_back(self->make_response_promise<ExecResult>());
            return held->back();
          },
          [=](cancel_atom, const std::string& id) {
            if (told_to_stop)
              told_to_stop->push_back(id);
          }};
}

// A scheduler with an executor that never answers (a worker whose link stays up, or is gone
// but not yet noticed) and one that answers at once.
class SchedulerWithABlackHole : public ::testing::Test {
 protected:
  SchedulerWithABlackHole() : system(with_message_types(cfg)) {}
  ~SchedulerWithABlackHole() override {
    for (auto actor : {caf::actor_cast<caf::actor>(scheduler), caf::actor_cast<caf::actor>(hole),
                       caf::actor_cast<caf::actor>(fresh)})
      self->send_exit(actor, caf::exit_reason::user_shutdown);
  }
  void start(scheduler_options options, const std::string& hole_name) {
    scheduler = spawn_scheduler(system, {}, options);
    self->send(scheduler, join_atom::value, hole_name, caf::actor_cast<caf::strong_actor_ptr>(hole));
  }
  // Sends a request; returns the executor that answered it ("" after 5 s).
  std::string answered_by(ExecRequest request) {
    self->send(scheduler, request);
    std::string executor;
    self->receive([&](const ExecResult& r) { executor = r.executor(); }, caf::after(std::chrono::seconds(5)) >> [] {});
    return executor;
  }
  caf::actor_system_config cfg;
  caf::actor_system system;
  std::shared_ptr<std::vector<caf::typed_response_promise<ExecResult>>> held =
      std::make_shared<std::vector<caf::typed_response_promise<ExecResult>>>();
  std::shared_ptr<std::vector<std::string>> told_to_stop = std::make_shared<std::vector<std::string>>();
  gpu_executor_actor hole = system.spawn(black_hole, held, told_to_stop);
  gpu_executor_actor fresh = spawn_null_executor(system);
  scheduler_actor scheduler;
  caf::scoped_actor self{system};
};

// Withdrawn (DELETE): a request in flight and one queued are answered CANCELLED at once; the
// executor holding the first is told to stop it, the second never reaches an executor, and an
// id nobody waits for is not found.
TEST_F(SchedulerWithABlackHole, AWithdrawnRequestIsAnsweredCancelledAndStopped) {
  start(scheduler_options{false, {}}, "hole#0");
  ExecRequest running, queued;
  running.set_request_id("running");
  queued.set_request_id("queued");
  self->send(scheduler, running);
  self->send(scheduler, queued);
  for (int i = 0; i < 100 && held->empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(held->size(), 1u);
  auto withdraw = [&](const std::string& id) {
    bool found = false;
    self->request(scheduler, std::chrono::seconds(2), cancel_atom::value, id)
        .receive([&](bool f) { found = f; }, [&](const caf::error&) { ADD_FAILURE() << "no answer to cancel " << id; });
    return found;
  };
  EXPECT_TRUE(withdraw("queued"));
  EXPECT_TRUE(withdraw("running"));
  EXPECT_FALSE(withdraw("never-sent"));
  std::map<std::string, std::string> verdicts;
  for (int i = 0; i < 2; ++i)
    self->receive([&](const ExecResult& r) { verdicts[r.request_id()] = Verdict_Name(r.verdict()); },
                  caf::after(std::chrono::seconds(2)) >> [] {});
  EXPECT_EQ(verdicts, (std::map<std::string, std::string>{{"queued", "CANCELLED"}, {"running", "CANCELLED"}}));
  for (int i = 0; i < 100 && told_to_stop->empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(*told_to_stop, std::vector<std::string>{"running"});
  EXPECT_EQ(held->size(), 1u) << "the withdrawn queued request reached the executor";
}

// A name is unique: an executor joining under a taken name (a worker rejoining before its old
// connection was noticed gone) replaces the first, and the first's work is placed again.
TEST_F(SchedulerWithABlackHole, ASecondJoinUnderATakenNameReplacesTheFirst) {
  start(scheduler_options{false, {}}, "w#0");
  ExecRequest request;
  request.set_request_id("r1");
  std::thread rejoin([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(held->size(), 1u) << "the request went to the first executor";
    caf::anon_send(scheduler, join_atom::value, std::string("w#0"), caf::actor_cast<caf::strong_actor_ptr>(fresh));
  });
  EXPECT_EQ(answered_by(request), "w#0") << "the request stayed with the replaced executor";
  rejoin.join();
}

// Bounded: a request placed on an executor that never answers is placed again once its
// deadline passes, and that executor gets nothing more.
TEST_F(SchedulerWithABlackHole, ARequestPastItsDeadlineIsPlacedAgain) {
  scheduler_options options{false, {}};
  options.attempts = 1;
  options.start_timeout = std::chrono::milliseconds(0);
  options.deadline_slack = std::chrono::milliseconds(300);
  start(options, "hole#0");
  ExecRequest request;
  request.set_request_id("r1");
  request.mutable_options()->set_total_timeout_s(0.2);
  std::thread join_fresh([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    caf::anon_send(scheduler, join_atom::value, std::string("fresh#0"), caf::actor_cast<caf::strong_actor_ptr>(fresh));
  });
  const auto sent = std::chrono::steady_clock::now();
  EXPECT_EQ(answered_by(request), "fresh#0") << "the request stayed in the black hole";
  join_fresh.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count(), 2.0);
  EXPECT_EQ(held->size(), 1u) << "the request went to the black hole first";
  request.set_request_id("r2");
  EXPECT_EQ(answered_by(request), "fresh#0");
  EXPECT_EQ(held->size(), 1u) << "the black hole got more work";
}

KernelActivity kernel(const char* name, const char* phase, bool generated, uint64_t start, uint64_t end) {
  KernelActivity k;
  k.set_name(name);
  *k.mutable_phase() = phase_calls_named({phase}).front();
  k.set_generated(generated);
  k.set_start_ns(start);
  k.set_end_ns(end);
  return k;
}

TEST(TraceProfile, CoverageIsGeneratedTimeOverCandidateTime) {
  std::vector<KernelActivity> trace = {
      kernel("batch_gemm", "untraced", false, 0, 9000000),    // 9 ms of a timed batch, unattributed
      kernel("gemm", "train", false, 0, 3000000),             // 3 ms library
      kernel("bias_relu", "train", true, 0, 1000000),         // 1 ms generated
      kernel("bias_relu", "eval", true, 0, 1000000),          // 1 ms generated
      kernel("checks", "checks", false, 0, 5000000),          // the harness's own
  };
  ProfileReport p = profile_from_trace(trace);
  EXPECT_DOUBLE_EQ(p.coverage(), 2.0 / 5.0);
  EXPECT_EQ(p.generated_launches_train(), 1);
  EXPECT_EQ(p.generated_launches_eval(), 1);
  EXPECT_DOUBLE_EQ(p.phase_gpu_ms().at("untraced"), 9.0);
  EXPECT_DOUBLE_EQ(p.phase_gpu_ms().at("train"), 4.0);
  ASSERT_EQ(p.top_kernels_size(), 2);
  EXPECT_EQ(p.top_kernels(0).name(), "gemm");
  EXPECT_DOUBLE_EQ(p.top_kernels(0).share(), 0.6);
  EXPECT_EQ(p.top_kernels(1).launches(), 2);
  EXPECT_EQ(p.kernels_seen(), 5);
}

TEST(TraceProfile, NoOwnKernelInAModeIsHackedUnlessTheCheckIsOff) {
  std::vector<KernelActivity> trace = {kernel("k", "train", true, 0, 1000), kernel("torch_op", "eval", false, 0, 1000)};
  ExecResult ok;
  ok.set_verdict(OK);
  ok.set_correct(true);
  ExecResult judged = ok;
  apply_profile_verdict(profile_from_trace(trace), false, &judged);
  EXPECT_EQ(judged.verdict(), HACKED);
  EXPECT_FALSE(judged.correct());
  ASSERT_EQ(judged.evidence_size(), 1);
  EXPECT_EQ(judged.evidence(0).source(), "cupti");
  EXPECT_NE(judged.evidence(0).detail().find("eval mode"), std::string::npos);
  ExecResult ablated = ok;
  apply_profile_verdict(profile_from_trace(trace), true, &ablated);
  EXPECT_EQ(ablated.verdict(), OK);
  EXPECT_EQ(ablated.evidence_size(), 1);
  ExecResult no_trace = ok;  // nothing seen: no judgement
  apply_profile_verdict(profile_from_trace({}), false, &no_trace);
  EXPECT_EQ(no_trace.verdict(), OK);
}

TEST(TraceProfile, KernelsSpanningMoreThanTheTimedRegionAreHacked) {
  std::vector<KernelActivity> trace = {
      kernel("k", "train", true, 0, 1000), kernel("k", "eval", true, 0, 1000),
      kernel("k", "timed:0", true, 0, 500000), kernel("k", "timed:0", true, 4000000, 5000000),  // 5 ms span
      kernel("k", "timed:1", true, 0, 5000000)};
  ProfileReport p = profile_from_trace(trace);
  ASSERT_EQ(p.timed_rep_span_ms_size(), 2);
  EXPECT_DOUBLE_EQ(p.timed_rep_span_ms(0), 5.0);
  ExecResult honest;
  honest.set_verdict(OK);
  honest.add_traced_rep_ms(5.01);
  honest.add_traced_rep_ms(5.02);
  apply_profile_verdict(p, false, &honest);
  EXPECT_EQ(honest.verdict(), OK);
  ExecResult hidden;  // the events saw 0.1 ms of the 5 ms
  hidden.set_verdict(OK);
  hidden.add_traced_rep_ms(0.1);
  hidden.add_traced_rep_ms(0.1);
  apply_profile_verdict(p, false, &hidden);
  EXPECT_EQ(hidden.verdict(), HACKED);
  EXPECT_EQ(hidden.evidence(0).kind(), WORK_OUTSIDE_TIMED_REGION);
}

TEST(ProfilerActor, RulesOnARecordedTraceAsTheDeviceLeftTheResult) {
  caf::actor_system_config cfg;
  add_message_types(cfg);
  caf::actor_system system{cfg};
  auto profiler = spawn_profiler(system);
  caf::scoped_actor self{system};
  const std::string trace_file = source_path("tests/data/traces/matmul_bias_relu_lazy.jsonl");
  const std::string key = read_text(source_path("tests/data/traces/matmul_bias_relu_lazy.key")).substr(0, 32);
  ExecRequest request;  // as the recording evaluation ran: 5 trials, 5 traced reps, on the GPU
  request.set_request_id("r1");
  request.set_device(CUDA);
  request.mutable_options()->set_correctness_trials(5);
  request.mutable_options()->set_traced_reps(5);
  request.mutable_candidate()->set_source(read_text(source_path("tasks/matmul_bias_relu/candidates/lazy.py")));
  ExecResult device_left = result_for(request);  // OK, with the judge's clock far above every window
  device_left.set_verdict(OK);
  const auto calls = read_checked_trace(trace_file, key).phase_calls;
  for (auto n = std::count_if(calls.begin(), calls.end(), [](const PhaseCall& c) { return c.kind() == TRACE_BATCH; });
       n > 0; --n)
    device_left.add_timed_batch_ms(1e6);
  for (int i = 0; i < 5; ++i)
    device_left.add_traced_rep_ms(1e6);
  for (auto n = std::count_if(calls.begin(), calls.end(), [](const PhaseCall& c) { return c.kind() == TRACE_DELIVER; });
       n > 0; --n)
    device_left.add_delivery_ms(1e6);
  device_left.set_delivery_copies(64);  // the recording's: at most 64 calls a batch, one output each
  device_left.set_delivery_bytes(int64_t{64} << 30);
  auto ask = [&](const CandidateTrace& trace) {
    ExecResult ruled;
    self->request(profiler, std::chrono::seconds(30), device_left, trace)
        .receive([&](const ExecResult& r) { ruled = r; }, [&](const caf::error& e) { FAIL() << system.render(e); });
    return ruled;
  };
  ExecResult ruled = ask(read_candidate_trace(trace_file, key, request));
  EXPECT_EQ(Verdict_Name(ruled.verdict()), "OK") << ruled.message();
  EXPECT_EQ(ruled.profile().evidence_source(), "cupti");
  EXPECT_GT(ruled.profile().coverage(), 0.01);
  EXPECT_LT(ruled.profile().coverage(), 0.02);
  EXPECT_TRUE(ruled.profile().trace_ended());
  EXPECT_EQ(ruled.harness_seconds().count("trace_check"), 1u);
  // Under another key no line is the library's: forged.
  ExecResult wrong_key = ask(read_candidate_trace(trace_file, "000102030405060708090a0b0c0d0e0f", request));
  EXPECT_EQ(Verdict_Name(wrong_key.verdict()), "HACKED");
  EXPECT_TRUE(has_evidence(wrong_key, TRACE_FORGED));
  EXPECT_EQ(wrong_key.profile().kernels_seen(), 0);
  // One fewer timed batch than the trace shows: the phase calls are not the harness's.
  device_left.mutable_timed_batch_ms()->RemoveLast();
  ExecResult fewer = ask(read_candidate_trace(trace_file, key, request));
  EXPECT_EQ(Verdict_Name(fewer.verdict()), "HACKED");
  EXPECT_TRUE(has_evidence(fewer, PHASE_SEQUENCE));
  // No trace made (no key): nothing ruled, the verdict stands.
  ExecResult untraced = ask(CandidateTrace{});
  EXPECT_EQ(Verdict_Name(untraced.verdict()), "OK");
  EXPECT_EQ(untraced.harness_seconds().count("trace_check"), 0u);
  self->send_exit(profiler, caf::exit_reason::user_shutdown);
}

// Traces recorded on an H100 by tests/profile_test (KGYM_TRACE_ARCHIVE), with their keys,
// so CI checks the trace's authentication and the profiler's logic on what the GPU reported.
checked_trace recorded_trace(const std::string& name) {
  auto key = read_text(source_path("tests/data/traces/" + name + ".key")).substr(0, 32);
  auto trace = read_checked_trace(source_path("tests/data/traces/" + name + ".jsonl"), key);
  EXPECT_EQ(trace.rejected, 0) << name << ": " << trace.first_rejected;
  EXPECT_TRUE(trace.ended) << name;
  const int batches = static_cast<int>(std::count_if(trace.phase_calls.begin(), trace.phase_calls.end(),
                                                     [](const PhaseCall& c) { return c.kind() == TRACE_BATCH; }));
  EXPECT_GT(batches, 0) << name;
  EXPECT_EQ(phase_protocol(trace.phase_calls, expected_phase_calls(5, batches, 5)), "complete") << name;
  // Only the candidate process is traced: at least one kernel for each of its 10 correctness
  // calls and 5 traced timed calls (the reference and the inputs are the judge's, untraced).
  EXPECT_GE(trace.kernels.size(), 15u) << name;
  return trace;
}

ProfileReport recorded(const std::string& name) { return profile_of(recorded_trace(name)); }

// What an honest candidate's process ran during the timing, on the H100, lay inside its own
// batch windows and its deliveries (the judge's times per request and the delivery's bounds
// are not in the archive: windows, every delivery asked for, and a delivery's copies by kind alone).
TEST(TraceProfile, RecordedH100TimingStaysInsideTheBatchWindows) {
  const delivery_limits any_size{std::vector<double>(10'000, 1e9), 1 << 20, int64_t{1} << 50};
  for (const char* name : {"gelu_scale_residual_fused", "matmul_bias_relu_fused", "matmul_bias_relu_lazy",
                           "rmsnorm_rows_fused", "square_matmul_token_kernel"}) {
    auto trace = recorded_trace(name);
    auto found = check_request_windows(trace, {}, any_size);
    EXPECT_GT(found.windows, 0) << name;
    EXPECT_GT(found.deliveries, 0) << name;  // recorded 2026-11-28, with deliveries
    EXPECT_EQ(found.outside, 0) << name << ": " << found.first_outside;
    // PyTorch's copy of a delivered output is one device-to-device copy of its bytes (CUPTI's
    // word): the kind a delivery admits.
    EXPECT_EQ(check_request_windows(trace, {}, {{}, 0, 0}).outside, found.deliveries) << name;
    // The batches' kernels and copies were recorded (without launch attribution).
    EXPECT_GT(std::count_if(trace.kernels.begin(), trace.kernels.end(),
                            [](const KernelActivity& k) { return k.phase().kind() == TRACE_UNTRACED; }),
              0)
        << name;
    // Closing the first window as it opens puts that batch's work outside.
    auto moved = trace;
    for (size_t i = 0; i < moved.phase_calls.size(); ++i)
      if (moved.phase_calls[i].kind() == TRACE_BATCH) {
        moved.phase_at_ns[i + 1] = moved.phase_at_ns[i];
        break;
      }
    EXPECT_GT(check_request_windows(moved, {}, any_size).outside, 0) << name;
  }
}

TEST(TraceProfile, RecordedH100TracesSeparateFusedLazyAndForged) {
  EXPECT_DOUBLE_EQ(recorded("gelu_scale_residual_fused").coverage(), 1.0);
  EXPECT_DOUBLE_EQ(recorded("matmul_bias_relu_fused").coverage(), 1.0);
  ProfileReport lazy = recorded("matmul_bias_relu_lazy");  // cuBLAS does the GEMM
  EXPECT_GT(lazy.coverage(), 0.01);
  EXPECT_LT(lazy.coverage(), 0.02);
  EXPECT_EQ(lazy.generated_launches_train(), 5);
  EXPECT_EQ(lazy.generated_launches_eval(), 5);
  EXPECT_FALSE(lazy.top_kernels(0).generated());  // the largest kernel is the library's
  EXPECT_LT(recorded("square_matmul_token_kernel").coverage(), 0.001);
  ProfileReport fused = recorded("gelu_scale_residual_fused");
  // 20 hidden launches per call. Recorded before the timed batches had windows (the
  // candidate now fails on a wrong timed output before its traced calls, so its trace
  // never flushes those): the spans are what this reads, not the phase protocol.
  ProfileReport side = profile_of(read_checked_trace(
      source_path("tests/data/traces/gelu_scale_residual_side_stream.jsonl"),
      read_text(source_path("tests/data/traces/gelu_scale_residual_side_stream.key")).substr(0, 32)));
  ASSERT_EQ(fused.timed_rep_span_ms_size(), 5);
  ASSERT_EQ(side.timed_rep_span_ms_size(), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_LT(fused.timed_rep_span_ms(i), 0.3) << i;
    EXPECT_GT(side.timed_rep_span_ms(i), 3.0) << i;
  }
  ProfileReport forged = recorded("gelu_scale_residual_forges_launch_record");
  EXPECT_EQ(forged.generated_launches_train(), 0);
  ExecResult r;
  r.set_verdict(OK);
  apply_profile_verdict(forged, false, &r);
  EXPECT_EQ(r.verdict(), HACKED);
}

TEST(TraceProfile, GeneratedKernelsMustBeNamedInTheCandidateSource) {
  auto trace = recorded_trace("matmul_bias_relu_fused").kernels;
  std::string source = read_text(source_path("tasks/matmul_bias_relu/candidates/fused.py"));
  auto honest = trace;
  EXPECT_TRUE(unmark_generated_not_in_source(honest, source).empty());
  EXPECT_DOUBLE_EQ(profile_from_trace(honest).coverage(), 1.0);
  // A forged trace: the library's kernels relabelled as the candidate's own.
  auto forged = recorded_trace("matmul_bias_relu_lazy").kernels;
  for (auto& k : forged)
    k.set_generated(true);
  std::string lazy_source = read_text(source_path("tasks/matmul_bias_relu/candidates/lazy.py"));
  EXPECT_DOUBLE_EQ(profile_from_trace(forged).coverage(), 1.0);  // what the forgery claims
  auto unmarked = unmark_generated_not_in_source(forged, lazy_source);
  ASSERT_FALSE(unmarked.empty());
  EXPECT_LT(profile_from_trace(forged).coverage(), 0.02);  // what it is worth after the check
  // Names count as whole identifiers, and C++ kernels by their demangled function name.
  // A template instance (a CUDA extension's "void scale_kernel<float, 4>(float*, int)") by
  // its template's name, a namespaced one by its own.
  std::vector<KernelActivity> kernels(5);
  kernels[0].set_name("add_kernel");
  kernels[1].set_name("_Z10add_kernelPfS_i");
  kernels[2].set_name("add_kernel2");
  kernels[3].set_name("_Z12scale_kernelIfLi4EEvPT_i");
  kernels[4].set_name("_ZN2ns9my_kernelEPf");
  for (auto& k : kernels)
    k.set_generated(true);
  EXPECT_EQ(unmark_generated_not_in_source(kernels, "def add_kernel(x):\n__global__ void scale_kernel(T* x, int n)\n"
                                                    "namespace ns { __global__ void my_kernel(float* x) {} }"),
            std::vector<std::string>{"add_kernel2"});
  EXPECT_TRUE(kernels[1].generated());
  EXPECT_TRUE(kernels[3].generated());
  EXPECT_TRUE(kernels[4].generated());
}


// A file the candidate could have replaced is read only as a regular file, never through a
// link or from a FIFO (which would block), and never past its bound.
TEST(UntrustedFile, RegularFilesOnlyAndBounded) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kgym_untrusted_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "log") << "0123456789"; }
  EXPECT_EQ(read_untrusted_file((dir / "log").string(), 100), "0123456789");
  EXPECT_EQ(read_untrusted_file((dir / "log").string(), 4), "0123");
  EXPECT_EQ(read_untrusted_file((dir / "log").string(), 4, /*tail=*/true), "6789");
  fs::create_symlink(dir / "log", dir / "link");
  EXPECT_EQ(read_untrusted_file((dir / "link").string(), 100), std::nullopt) << "a link was followed";
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(read_untrusted_file((dir / "fifo").string(), 100), std::nullopt) << "a FIFO was read";
  EXPECT_EQ(read_untrusted_file((dir / "missing").string(), 100), std::nullopt);
  EXPECT_EQ(read_untrusted_file(dir.string(), 100), std::nullopt) << "a directory was read";
  { std::ofstream(dir / "trace") << "line one\nline two\n"; }
  fs::remove(dir / "link");
  fs::create_symlink(dir / "trace", dir / "link");
  EXPECT_EQ(trace_lines((dir / "trace").string()), (std::vector<std::string>{"line one", "line two"}));
  EXPECT_TRUE(trace_lines((dir / "link").string()).empty()) << "a trace read through a link";
  fs::remove_all(dir);
}

TEST(EvalApi, SecretsCompareWholeAndPendingAnswersEscapeTheirIds) {
  EXPECT_TRUE(secrets_equal("s3cret", "s3cret"));
  EXPECT_FALSE(secrets_equal("s3creT", "s3cret"));
  EXPECT_FALSE(secrets_equal("s3cre", "s3cret"));
  EXPECT_FALSE(secrets_equal("s3crett", "s3cret"));
  EXPECT_FALSE(secrets_equal("", "s3cret"));
  EXPECT_TRUE(secrets_equal("", ""));
  EvalPending pending;
  ASSERT_EQ(from_json(pending_json("a\"b\\c\n"), &pending), "");
  EXPECT_EQ(pending.request_id(), "a\"b\\c\n");
  EXPECT_TRUE(pending.pending());
}

TEST(EvalApi, DecodesChecksAndRefusesClearly) {
  std::map<std::string, Task> suite;
  suite["t"].set_id("t");
  suite["t"].set_source("class Model: pass");
  EvalRequest r;
  r.set_request_id("a");
  r.set_task_id("t");
  r.set_candidate_source("class ModelNew: pass");
  auto decoded = decode_eval_request(r.SerializeAsString(), 1 << 20);
  ASSERT_EQ(decoded.error, "");
  EXPECT_FALSE(decoded.json);
  bool from_suite = false;
  EXPECT_EQ(check_eval_request(&decoded.request, suite, "", &from_suite), "");
  EXPECT_EQ(decoded.request.task().source(), "class Model: pass");  // filled from the suite
  EXPECT_TRUE(from_suite);
  from_suite = false;
  EXPECT_EQ(check_eval_request(&decoded.request, suite, "", &from_suite), "");  // a task of its own now
  EXPECT_FALSE(from_suite);
  EXPECT_TRUE(decode_eval_request(to_json(r), 1 << 20).json);
  EXPECT_NE(decode_eval_request(std::string(100, 'x'), 10).error.find("over the server's limit"), std::string::npos);
  EXPECT_NE(check_eval_request(&r, suite, "s").find("requires a secret"), std::string::npos);
  r.set_task_id("u");
  EXPECT_NE(check_eval_request(&r, suite, "").find("unknown task 'u'"), std::string::npos);
  EXPECT_TRUE(is_loopback_endpoint("tcp://127.0.0.1:5555"));
  EXPECT_TRUE(is_loopback_endpoint("ipc:///tmp/x"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://0.0.0.0:5555"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://*:5555"));
}

TEST(OpenAIWire, RequestBodyAndResponseParsing) {
  OpenAIConfig config = openai_defaults(OpenAIConfig{});
  config.set_model("m");
  config.set_temperature(0.0);  // greedy must still be sent
  config.set_token_ids(true);
  openai::ChatRequest chat;
  ASSERT_EQ(from_json(openai_request_body(config, "the task", 5), &chat), "");
  EXPECT_EQ(chat.model(), "m");
  ASSERT_EQ(chat.messages_size(), 2);
  EXPECT_EQ(chat.messages(0).role(), "system");
  EXPECT_EQ(chat.messages(1).content(), "the task");
  EXPECT_TRUE(chat.has_temperature());
  EXPECT_EQ(chat.temperature(), 0.0);
  EXPECT_TRUE(chat.logprobs());
  EXPECT_TRUE(chat.return_token_ids());
  EXPECT_EQ(chat.seed(), 5);
  EXPECT_EQ(openai_path(config), "/chat/completions");

  // vLLM's "token_id:N" tokens give the ids when no token_ids field is there; extra fields are ignored.
  Completion c = parse_openai_response(config, R"({"id":"x","system_fingerprint":"kgym-v12","usage":{"a":1},
      "choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length",
      "logprobs":{"content":[{"token":"token_id:7","logprob":-0.25,"top_logprobs":[]},
                             {"token":"token_id:9","logprob":-1.5}]}}]})");
  EXPECT_EQ(c.error(), "");
  EXPECT_EQ(c.text(), "hi");
  EXPECT_EQ(c.finish_reason(), "length");
  ASSERT_EQ(c.token_ids_size(), 2);
  EXPECT_EQ(c.token_ids(1), 9);
  EXPECT_EQ(c.logprobs(0), -0.25);
  EXPECT_EQ(c.policy_version(), 12);
  // Plain tokens without ids: log-probs, no ids (the learner then cannot train on the turn).
  Completion plain = parse_openai_response(
      config, R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-0.5}]}}]})");
  EXPECT_EQ(plain.token_ids_size(), 0);
  EXPECT_EQ(plain.logprobs_size(), 1);
  EXPECT_NE(parse_openai_response(config, R"({"choices": [{"message": {"content": "trunc)").error().find(
                "not the OpenAI JSON"),
            std::string::npos);
  EXPECT_NE(parse_openai_response(config, R"({"choices": []})").error().find("no choices"), std::string::npos);
  EXPECT_FALSE(version_from_fingerprint("fp_44709d6fcb"));
  EXPECT_TRUE(retryable_status(429));
  EXPECT_TRUE(retryable_status(0));
  EXPECT_FALSE(retryable_status(400));
}

}  // namespace
}  // namespace kgym::test

namespace kgym {
// A turn's evaluation request and its training sample carry one id, built in one place.
TEST(Ids, ATurnIdIsItsEpisodesIdAndItsIndex) {
  EXPECT_EQ(turn_id("run1-e7", 2), "run1-e7/t2");
  EXPECT_EQ(turn_id("e", 0), "e/t0");
}
}  // namespace kgym
