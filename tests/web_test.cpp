// The browser view (web/): its pure selection functions with exact expectations, the
// incremental run index on a real run directory, and the server over real loopback sockets.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "messages/json.hpp"
#include "pipeline/episode_store.hpp"
#include "pipeline/run_dir.hpp"
#include "report/metric_panels.hpp"
#include "web/episode_query.hpp"
#include "web/run_index.hpp"
#include "web/web_server.hpp"

namespace fs = std::filesystem;
using namespace kgym;
using namespace kgym::web;

namespace {

// A turn's answer written to break a page that would put it in as markup.
const std::string hostile_program =
    "</script><script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">\nclass ModelNew: pass";

Episode episode(const std::string& id, const std::string& task, int64_t iteration,
                const std::vector<std::pair<Verdict, double>>& turns) {
  Episode e;
  e.set_episode_id(id);
  e.set_task_id(task);
  e.set_iteration(iteration);
  e.set_wall_s(2.5);
  for (size_t i = 0; i < turns.size(); ++i) {
    Turn* t = e.add_turns();
    t->set_index(static_cast<int>(i));
    t->set_response(hostile_program);
    t->mutable_result()->set_verdict(turns[i].first);
    t->mutable_result()->set_speedup(turns[i].second);
    t->mutable_reward()->set_total(0.25 * static_cast<double>(i + 1));
  }
  return e;
}

EpisodeSummary finished(const std::string& id, const std::string& task, Verdict last) {
  return summarize(episode(id, task, 0, {{last, 1.0}}));
}

EpisodeSummary running(const std::string& id, const std::string& task) {
  EpisodeStatus s;
  s.set_episode_id(id);
  s.set_task_id(task);
  s.set_turn(1);
  s.set_turns(3);
  s.set_stage(EXECUTE);
  s.set_last_verdict(INCORRECT);
  s.set_elapsed_s(12.5);
  return summarize(s);
}

std::vector<std::string> ids(const EpisodeList& list) {
  std::vector<std::string> out;
  for (const auto& e : list.episodes())
    out.push_back(e.episode_id());
  return out;
}

class RunDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("kgym-web-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    TrainConfig config;
    config.set_iterations(3);
    config.set_device(CPU);
    run_dir::create(dir_, config);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void append(const Episode& e) { episode_store(run_dir::episodes_path(dir_)).append(e); }
  void metrics(int64_t iteration, double reward) {
    IterationMetrics m;
    m.set_iteration(iteration);
    m.set_mean_reward(reward);
    m.set_correct_rate(0.5);
    run_dir::append_metrics(dir_, m);
  }
  std::string dir_;
};

}  // namespace

TEST(EpisodeQuery, SummarizesAFinishedEpisodeByItsLastTurnAndBestSpeedup) {
  auto s = summarize(episode("it2/t/0", "t", 2, {{OK, 1.5}, {OK, 2.0}, {INCORRECT, 0.0}}));
  EXPECT_EQ(s.episode_id(), "it2/t/0");
  EXPECT_EQ(s.state(), EPISODE_FINISHED);
  EXPECT_EQ(s.turn(), 3);
  EXPECT_EQ(s.turns(), 3);
  EXPECT_EQ(s.iteration(), 2);
  EXPECT_EQ(s.last_verdict(), INCORRECT);
  EXPECT_DOUBLE_EQ(s.last_reward(), 0.75);
  EXPECT_DOUBLE_EQ(s.best_speedup(), 2.0);  // a speedup of a turn that was not OK does not count
  EXPECT_DOUBLE_EQ(s.wall_s(), 2.5);
  auto none = summarize(episode("e", "t", 0, {{HACKED, 50.0}}));
  EXPECT_EQ(none.best_speedup(), 0.0);
  auto r = running("r1", "t");
  EXPECT_EQ(r.state(), EPISODE_RUNNING);
  EXPECT_EQ(r.stage(), EXECUTE);
  EXPECT_EQ(r.turns(), 3);
  EXPECT_DOUBLE_EQ(r.elapsed_s(), 12.5);
}

TEST(EpisodeQuery, ParsesTheFiltersAndRefusesWhatItDoesNotKnow) {
  std::string error;
  auto f = parse_filter({{"state", "running"}, {"task", "softmax_rows"}, {"verdict", "hacked"}, {"limit", "7"}}, &error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->state, EPISODE_RUNNING);
  EXPECT_EQ(f->task, "softmax_rows");
  EXPECT_EQ(f->verdict, HACKED);
  EXPECT_EQ(f->limit, 7u);
  auto defaults = parse_filter({}, &error);
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->state, EPISODE_STATE_UNSPECIFIED);
  EXPECT_EQ(defaults->limit, 100u);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"state", "done"}, {"verdict", "GREAT"}, {"verdict", "VERDICT_UNSPECIFIED"}, {"limit", "0"},
           {"limit", "1001"}, {"limit", "-3"}, {"limit", "5x"}, {"sort", "reward"}}) {
    error.clear();
    EXPECT_FALSE(parse_filter({{key, value}}, &error)) << key << "=" << value;
    EXPECT_FALSE(error.empty()) << key << "=" << value;
  }
}

TEST(EpisodeQuery, SelectsRunningFirstThenFinishedNewestFirstUpToTheLimit) {
  std::vector<EpisodeSummary> run = {running("r1", "a"), running("r2", "b")};
  std::vector<EpisodeSummary> done = {finished("f1", "a", OK), finished("f2", "b", HACKED), finished("f3", "a", OK),
                                      finished("f4", "a", INCORRECT)};
  episode_filter all;
  auto everything = select(run, done, all);
  EXPECT_EQ(ids(everything), (std::vector<std::string>{"r1", "r2", "f4", "f3", "f2", "f1"}));
  EXPECT_EQ(everything.matched(), 6);
  EXPECT_EQ(everything.finished_stored(), 4);
  episode_filter task_a{EPISODE_STATE_UNSPECIFIED, "a", VERDICT_UNSPECIFIED, 2};
  auto a = select(run, done, task_a);
  EXPECT_EQ(ids(a), (std::vector<std::string>{"r1", "f4"}));
  EXPECT_EQ(a.matched(), 4);  // r1, f4, f3, f1: counted past the limit
  episode_filter ok_finished{EPISODE_FINISHED, "", OK, 100};
  EXPECT_EQ(ids(select(run, done, ok_finished)), (std::vector<std::string>{"f3", "f1"}));
  episode_filter incorrect{EPISODE_STATE_UNSPECIFIED, "", INCORRECT, 100};  // a running one's last turn too
  EXPECT_EQ(ids(select(run, done, incorrect)), (std::vector<std::string>{"r1", "r2", "f4"}));
}

TEST(MetricPanels, NameDoubleFieldsOfTheMetricsAndPlotTheirValues) {
  ASSERT_EQ(metric_panels().size(), 6u);
  std::vector<IterationMetrics> lines(2);
  lines[0].set_mean_reward(0.25);
  lines[1].set_mean_reward(0.5);
  lines[1].set_hack_rate(0.125);
  auto drawn = plot_panels(metric_panels(), lines);
  ASSERT_EQ(drawn.size(), 6u);
  EXPECT_EQ(drawn[0].title, "mean reward per turn");
  EXPECT_EQ(drawn[0].series[0].values, (std::vector<double>{0.25, 0.5}));
  EXPECT_EQ(drawn[2].series[0].name, "hacked");
  EXPECT_EQ(drawn[2].series[0].values, (std::vector<double>{0.0, 0.125}));
  MetricPanel wrong;
  wrong.set_title("x");
  auto* s = wrong.add_series();
  s->set_label("per turn");
  s->set_field("fast1_per_turn");  // repeated: not a curve
  EXPECT_THROW(plot_panels({wrong}, lines), std::invalid_argument);
}

TEST_F(RunDirectory, TheIndexReadsWhatTheRunAppendsAndWaitsForARecordStillBeingWritten) {
  EXPECT_THROW(run_index(dir_ + "/nothing"), std::invalid_argument);
  append(episode("it0/a/0", "a", 0, {{OK, 1.2}}));
  metrics(0, 0.5);
  run_index index(dir_);
  ASSERT_EQ(index.finished().size(), 1u);
  ASSERT_EQ(index.metrics().size(), 1u);
  EXPECT_EQ(index.config().iterations(), 3);
  append(episode("it0/b/1", "b", 0, {{HACKED, 9.0}, {OK, 1.1}}));
  // Half of a third record, as a writer in the middle of it leaves the file.
  std::string whole;
  {
    std::string other = dir_ + "/other.pb";
    episode_store(other).append(episode("it1/a/0", "a", 1, {{OK, 3.0}}));
    std::ifstream in(other, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::ofstream out(run_dir::episodes_path(dir_), std::ios::binary | std::ios::app);
    out.write(whole.data(), static_cast<std::streamsize>(whole.size() / 2));
  }
  metrics(1, 0.75);
  index.refresh();
  ASSERT_EQ(index.finished().size(), 2u);
  EXPECT_EQ(index.finished()[1].episode_id(), "it0/b/1");
  EXPECT_EQ(index.metrics().size(), 2u);
  EXPECT_EQ(index.tasks(), (std::set<std::string>{"a", "b"}));
  {
    std::ofstream out(run_dir::episodes_path(dir_), std::ios::binary | std::ios::app);
    out.write(whole.data() + whole.size() / 2, static_cast<std::streamsize>(whole.size() - whole.size() / 2));
  }
  index.refresh();
  ASSERT_EQ(index.finished().size(), 3u);
  EXPECT_DOUBLE_EQ(index.finished()[2].best_speedup(), 3.0);
  auto b = index.episode("it0/b/1");
  ASSERT_TRUE(b);
  ASSERT_EQ(b->turns_size(), 2);
  EXPECT_EQ(b->turns(0).result().verdict(), HACKED);
  EXPECT_EQ(b->turns(1).response(), hostile_program);
  EXPECT_FALSE(index.episode("it9/none/0"));
}

TEST_F(RunDirectory, TheServerAnswersItsApiOverLoopbackWithTheRunAsStored) {
  append(episode("it0/a/0", "a", 0, {{OK, 1.2}}));
  append(episode("it0/b/0", "b", 0, {{INCORRECT, 0.0}, {HACKED, 40.0}}));
  metrics(0, 0.5);
  metrics(1, 0.75);
  MonitorView view;
  *view.add_running() = EpisodeStatus();
  view.mutable_running(0)->set_episode_id("it2/a/0");
  view.mutable_running(0)->set_task_id("a");
  view.mutable_running(0)->set_stage(INFERENCE);
  view.set_policy_version(2);
  std::atomic<bool> live{true};
  web_server server(dir_, web_options{}, [&]() -> std::optional<MonitorView> {
    return live ? std::optional<MonitorView>(view) : std::nullopt;
  });
  httplib::Client client("127.0.0.1", server.port());

  auto run = client.Get("/api/run");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, 200);
  EXPECT_EQ(run->get_header_value("Content-Type"), "application/json");
  EXPECT_NE(run->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  RunView rv;
  ASSERT_EQ(from_json(run->body, &rv), "");
  EXPECT_TRUE(rv.live());
  EXPECT_EQ(rv.iterations(), 2);
  EXPECT_DOUBLE_EQ(rv.latest().mean_reward(), 0.75);
  EXPECT_EQ(rv.episodes_finished(), 2);
  EXPECT_EQ(rv.episodes_running(), 1);
  EXPECT_EQ(rv.policy_version(), 2);
  EXPECT_EQ(rv.config().iterations(), 3);
  EXPECT_EQ(rv.panels_size(), static_cast<int>(metric_panels().size()));
  EXPECT_EQ(std::vector<std::string>(rv.tasks().begin(), rv.tasks().end()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rv.verdicts(0), "OK");

  auto since = client.Get("/api/metrics?since=1");
  ASSERT_TRUE(since);
  MetricsSeries series;
  ASSERT_EQ(from_json(since->body, &series), "");
  ASSERT_EQ(series.iterations_size(), 1);
  EXPECT_EQ(series.since(), 1);
  EXPECT_DOUBLE_EQ(series.iterations(0).mean_reward(), 0.75);
  EXPECT_EQ(client.Get("/api/metrics?since=-1")->status, 400);

  auto list = client.Get("/api/episodes?verdict=HACKED");
  ASSERT_TRUE(list);
  EpisodeList el;
  ASSERT_EQ(from_json(list->body, &el), "");
  ASSERT_EQ(el.episodes_size(), 1);
  EXPECT_EQ(el.episodes(0).episode_id(), "it0/b/0");
  EXPECT_DOUBLE_EQ(el.episodes(0).best_speedup(), 0.0);
  auto all = client.Get("/api/episodes");
  ASSERT_EQ(from_json(all->body, &el), "");
  EXPECT_EQ(ids(el), (std::vector<std::string>{"it2/a/0", "it0/b/0", "it0/a/0"}));
  auto bad = client.Get("/api/episodes?verdict=GREAT");
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("none of kgym's verdicts"), std::string::npos);

  // An id with '/' in it, percent-encoded as the page sends it; the program comes back as the
  // policy wrote it, as JSON string data.
  auto one = client.Get("/api/episodes/it0%2Fb%2F0");
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200);
  Episode e;
  ASSERT_EQ(from_json(one->body, &e), "");
  ASSERT_EQ(e.turns_size(), 2);
  EXPECT_EQ(e.turns(1).response(), hostile_program);
  EXPECT_EQ(e.turns(1).result().verdict(), HACKED);
  EXPECT_EQ(client.Get("/api/episodes/it9%2Fnone")->status, 404);
  EXPECT_EQ(client.Get("/nothing/here")->status, 404);
  EXPECT_EQ(client.Post("/api/run", "{}", "application/json")->status, 404);  // read-only

  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<script src=\"/app.js\""), std::string::npos);
  EXPECT_EQ(page->body.find("<script>"), std::string::npos);  // no inline script to allow
  auto script = client.Get("/app.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  EXPECT_EQ(script->body.find("innerHTML"), std::string::npos);  // text only, never markup

  live = false;  // the run ended: what is stored stays
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the monitor cache
  ASSERT_EQ(from_json(client.Get("/api/run")->body, &rv), "");
  EXPECT_FALSE(rv.live());
  EXPECT_EQ(rv.episodes_running(), 0);
  EXPECT_EQ(rv.episodes_finished(), 2);
}

TEST_F(RunDirectory, TheEventStreamSendsNewMetricsAndEpisodesAsTheRunWritesThem) {
  metrics(0, 0.5);
  web_options options;
  options.event_interval_s = 0.1;
  options.max_event_streams = 1;
  web_server server(dir_, options);
  std::mutex mutex;
  std::string received;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(10, 0);
    client.Get("/api/events", [&](const char* data, size_t size) {
      std::lock_guard<std::mutex> lock(mutex);
      received.append(data, size);
      return !done.load();
    });
  });
  auto seen = [&](const std::string& text) {
    for (int i = 0; i < 100; ++i) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (received.find(text) != std::string::npos)
          return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  EXPECT_TRUE(seen("event: metrics"));
  EXPECT_TRUE(seen("event: run"));
  // One stream at a time here: a second is refused, not queued on a thread.
  httplib::Client second("127.0.0.1", server.port());
  auto refused = second.Get("/api/events");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  append(episode("it1/late/0", "late", 1, {{OK, 1.7}}));
  metrics(1, 0.875);
  EXPECT_TRUE(seen("it1/late/0"));
  EXPECT_TRUE(seen("0.875"));
  done = true;
  reader.join();
}

TEST_F(RunDirectory, BeyondLoopbackTheViewNeedsItsSecret) {
  web_options open;
  open.host = "0.0.0.0";
  EXPECT_THROW(web_server(dir_, open), std::invalid_argument);
  web_options guarded;
  guarded.secret = "s3cret-view";
  web_server server(dir_, guarded);
  httplib::Client client("127.0.0.1", server.port());
  auto none = client.Get("/api/run");
  EXPECT_EQ(none->status, 401);
  EXPECT_NE(none->body.find("?key="), std::string::npos);
  EXPECT_EQ(client.Get("/api/run", {{"Authorization", "Bearer wrong"}})->status, 401);
  EXPECT_EQ(client.Get("/api/run", {{"Authorization", "Bearer s3cret-view"}})->status, 200);
  auto keyed = client.Get("/?key=s3cret-view");
  EXPECT_EQ(keyed->status, 200);
  std::string cookie = keyed->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(client.Get("/api/episodes", {{"Cookie", "other=1; kgym_web_key=s3cret-view"}})->status, 200);
  EXPECT_EQ(client.Get("/api/episodes", {{"Cookie", "kgym_web_key=s3cret"}})->status, 401);
}
