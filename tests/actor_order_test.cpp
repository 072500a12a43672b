// Actors driven message by message: CAF 0.17's test coordinator runs every actor on the test's
// own thread, only when the test says, with a clock that moves only when told. The order of
// every message is the test's, so an ordering bug shows every time and nothing sleeps.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/episode.hpp"
#include "actors/scheduler.hpp"
#include "messages/caf_types.hpp"
#include "messages/json.hpp"
#include "service/api_service.hpp"

namespace kgym {
namespace {

using answer_atom = caf::atom_constant<caf::atom("answer")>;

// What a scripted executor holds and was told: the test answers its requests one by one.
struct executor_log {
  std::deque<std::pair<std::string, caf::response_promise>> held;  // (request id, its promise), in arrival
  std::vector<std::string> received;                               // every request id, in arrival
  std::vector<std::string> cancelled;
};

// Answers the held request `id` with `result`; false when none is held.
bool deliver_held(executor_log& log, const std::string& id, const ExecResult& result) {
  for (auto it = log.held.begin(); it != log.held.end(); ++it)
    if (it->first == id) {
      it->second.deliver(result);
      log.held.erase(it);
      return true;
    }
  return false;
}

// An executor that answers only when the test sends it (answer_atom, request id, verdict).
caf::behavior scripted_executor(caf::event_based_actor* self, std::shared_ptr<executor_log> log) {
  return {
      [=](const ExecRequest& request) -> caf::response_promise {
        log->received.push_back(request.request_id());
        log->held.emplace_back(request.request_id(), self->make_response_promise());
        return log->held.back().second;
      },
      [=](cancel_atom, const std::string& id) { log->cancelled.push_back(id); },
      [=](answer_atom, const std::string& id, int verdict) {
        ExecResult result;
        result.set_request_id(id);
        result.set_verdict(static_cast<Verdict>(verdict));
        if (!deliver_held(*log, id, result))
          ADD_FAILURE() << "the executor holds no request " << id;
      },
  };
}

caf::actor_system_config& deterministic(caf::actor_system_config& cfg) {
  add_message_types(cfg);
  cfg.set("scheduler.policy", caf::atom("testing"));
  return cfg;
}

class SchedulerInOrder : public ::testing::Test {
 protected:
  SchedulerInOrder()
      : system(deterministic(cfg)), sched(dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler())) {}
  ~SchedulerInOrder() override {
    self->send_exit(scheduler, caf::exit_reason::user_shutdown);
    for (auto& [name, e] : executors)
      self->send_exit(e.handle, caf::exit_reason::user_shutdown);
    sched.run();
  }

  struct scripted {
    caf::actor handle;
    std::shared_ptr<executor_log> log;
  };
  // A scripted executor joined under `name`.
  executor_log& join(const std::string& name) {
    auto log = std::make_shared<executor_log>();
    auto handle = system.spawn(scripted_executor, log);
    executors[name] = {handle, log};
    self->send(scheduler, join_atom::value, name, caf::actor_cast<caf::strong_actor_ptr>(handle));
    sched.run();
    return *log;
  }
  void start(scheduler_options options = scheduler_options{false, {}}) {
    scheduler = spawn_scheduler(system, {}, std::move(options));
    sched.run();
  }
  static ExecRequest request(const std::string& id, const std::string& source = "") {
    ExecRequest r;
    r.set_request_id(id);
    r.mutable_candidate()->set_source(source.empty() ? "class ModelNew: pass  # " + id : source);
    return r;
  }
  void submit(const ExecRequest& r) {
    self->send(scheduler, r);
    sched.run();
  }
  void answer(const std::string& executor, const std::string& id, Verdict verdict = OK) {
    self->send(executors.at(executor).handle, answer_atom::value, id, static_cast<int>(verdict));
    sched.run();
  }
  // The answers the test's actor got so far: request id -> (verdict, executor, from cache).
  std::map<std::string, ExecResult> answers() {
    std::map<std::string, ExecResult> got;
    bool more = true;
    while (more)
      self->receive([&](const ExecResult& r) { got[r.request_id()] = r; },
                    caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
    return got;
  }
  SchedulerStatus status() {
    auto handle = self->request(scheduler, caf::infinite, status_atom::value);
    sched.run();
    SchedulerStatus s;
    handle.receive([&](const SchedulerStatus& got) { s = got; }, [&](const caf::error&) { ADD_FAILURE(); });
    return s;
  }

  caf::actor_system_config cfg;
  caf::actor_system system;
  caf::scheduler::test_coordinator& sched;
  caf::scoped_actor self{system};
  scheduler_actor scheduler;
  std::map<std::string, scripted> executors;
};

// One request at a time per executor, in arrival order; the next goes to whichever answers first.
TEST_F(SchedulerInOrder, PlacesOneAtATimeInArrivalOrder) {
  start();
  auto& a = join("a");
  auto& b = join("b");
  for (const char* id : {"r0", "r1", "r2", "r3"})
    submit(request(id));
  EXPECT_EQ(a.received, std::vector<std::string>{"r0"});
  EXPECT_EQ(b.received, std::vector<std::string>{"r1"});
  EXPECT_EQ(status().queued(), 2);
  answer("b", "r1");
  EXPECT_EQ(b.received, (std::vector<std::string>{"r1", "r2"}));
  answer("b", "r2", INCORRECT);
  EXPECT_EQ(b.received, (std::vector<std::string>{"r1", "r2", "r3"}));
  EXPECT_EQ(a.received, std::vector<std::string>{"r0"});
  auto got = answers();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got["r1"].executor(), "b");
  EXPECT_EQ(got["r2"].verdict(), INCORRECT);
}

// Identical requests in flight at once run once, and each is answered under its own id; with
// the cache, a later identical one is answered from it without reaching an executor, and a
// result kgym itself failed (INTERNAL_ERROR) is not kept.
TEST_F(SchedulerInOrder, RunsIdenticalRequestsOnceAndCachesTheirResult) {
  start(scheduler_options{true, {}});
  auto& a = join("a");
  const std::string program = "class ModelNew: same = 1";
  submit(request("first", program));
  submit(request("twin", program));
  EXPECT_EQ(a.received, std::vector<std::string>{"first"});
  answer("a", "first");
  auto got = answers();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got["twin"].verdict(), OK);
  EXPECT_FALSE(got["twin"].from_cache());
  submit(request("later", program));
  got = answers();
  ASSERT_EQ(got.count("later"), 1u);
  EXPECT_TRUE(got["later"].from_cache());
  EXPECT_EQ(a.received, std::vector<std::string>{"first"});
  submit(request("broken", "class ModelNew: other = 2"));
  answer("a", "broken", INTERNAL_ERROR);
  submit(request("again", "class ModelNew: other = 2"));
  EXPECT_EQ(a.received, (std::vector<std::string>{"first", "broken", "again"})) << "an internal error was cached";
}

// An executor that dies with work in flight: the work goes back to the front of the queue and
// to the next free executor, and is answered once.
TEST_F(SchedulerInOrder, PlacesALostExecutorsWorkAgainFirst) {
  start();
  auto& a = join("a");
  auto& b = join("b");
  for (const char* id : {"r0", "r1", "r2"})
    submit(request(id));
  self->send_exit(executors.at("a").handle, caf::exit_reason::kill);
  sched.run();
  EXPECT_EQ(b.received, std::vector<std::string>{"r1"});
  answer("b", "r1");
  EXPECT_EQ(b.received, (std::vector<std::string>{"r1", "r0"})) << "the lost request did not go first";
  answer("b", "r0");
  answer("b", "r2");
  auto got = answers();
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(got["r0"].executor(), "b");
  EXPECT_EQ(a.received, std::vector<std::string>{"r0"});
  EXPECT_EQ(status().executors_size(), 1);
}

// A request held past its deadline (an executor that never answers): once the clock passes it,
// the executor is lost and the request placed on another; nothing waited in real time.
TEST_F(SchedulerInOrder, PlacesARequestPastItsDeadlineAgain) {
  scheduler_options options{false, {}};
  options.attempts = 1;
  options.start_timeout = std::chrono::milliseconds(0);
  options.deadline_slack = std::chrono::milliseconds(300);
  start(options);
  auto& hole = join("hole");
  ExecRequest r = request("r0");
  r.mutable_options()->set_total_timeout_s(0.2);  // deadline 0.2 s + 0.3 s
  submit(r);
  auto& fresh = join("fresh");
  EXPECT_TRUE(fresh.received.empty());
  sched.advance_time(std::chrono::milliseconds(499));
  sched.run();
  EXPECT_TRUE(fresh.received.empty()) << "placed again before its deadline";
  sched.advance_time(std::chrono::milliseconds(2));
  sched.run();
  EXPECT_EQ(fresh.received, std::vector<std::string>{"r0"});
  answer("fresh", "r0");
  EXPECT_EQ(answers()["r0"].executor(), "fresh");
  submit(request("r1"));
  EXPECT_EQ(hole.received, std::vector<std::string>{"r0"}) << "the lost executor got more work";
}

// Withdrawn while in flight: answered CANCELLED at once, the executor told to stop it, and its
// late answer goes to nobody; the executor is free for the next request.
TEST_F(SchedulerInOrder, AWithdrawnRequestIsCancelledAndItsLateAnswerDropped) {
  start();
  auto& a = join("a");
  submit(request("r0"));
  submit(request("r1"));
  auto found = self->request(scheduler, caf::infinite, cancel_atom::value, std::string("r0"));
  sched.run();
  found.receive([](bool f) { EXPECT_TRUE(f); }, [](const caf::error&) { ADD_FAILURE(); });
  EXPECT_EQ(a.cancelled, std::vector<std::string>{"r0"});
  EXPECT_EQ(answers()["r0"].verdict(), CANCELLED);
  answer("a", "r0", OK);  // the stopped evaluation's answer
  EXPECT_TRUE(answers().empty()) << "a withdrawn request was answered twice";
  EXPECT_EQ(a.received, (std::vector<std::string>{"r0", "r1"}));
}

// A request that builds CUDA extensions goes to a busy executor ahead of its turn (its build
// workers compile while the device evaluates); plain requests wait for it to be idle.
TEST_F(SchedulerInOrder, SendsRequestsThatBuildExtensionsAhead) {
  start();
  auto& a = join("a");
  const std::string cuda = "from torch.utils.cpp_extension import load_inline\nclass ModelNew: pass";
  submit(request("plain0"));
  submit(request("plain1"));
  submit(request("cuda2", cuda + "  # 2"));
  submit(request("cuda3", cuda + "  # 3"));
  EXPECT_EQ(a.received, (std::vector<std::string>{"plain0", "cuda2", "cuda3"}));
  answer("a", "plain0");
  answer("a", "cuda2");
  answer("a", "cuda3");
  EXPECT_EQ(a.received.back(), "plain1");
}

// The services of one episode, scripted: inference answers "program <turn>" ("broken" for turn
// 1, which the compiler refuses), the scheduler answers OK, the reward is held until the test
// releases it, and the monitor records every status.
struct episode_script {
  std::vector<GenerateRequest> asked;       // inference's requests, in order
  std::vector<std::string> evaluated;       // the scheduler's request ids
  std::deque<caf::response_promise> rewards;  // held
  std::vector<std::pair<int, EpisodeStage>> stages;  // (turns finished, stage) the monitor saw
};

caf::behavior scripted_inference(caf::event_based_actor*, std::shared_ptr<episode_script> script) {
  return {[=](const GenerateRequest& r) {
            script->asked.push_back(r);
            Completion c;
            c.set_text(r.turn() == 1 ? "broken" : "program " + std::to_string(r.turn()));
            return c;
          },
          [](const EmbeddedPolicy&) {}, [](const PolicyVersion&) {}};
}

caf::behavior scripted_compiler(caf::event_based_actor*) {
  return {[](const CompileRequest& r) {
    CompileResult c;
    c.set_ok(r.response() != "broken");
    c.set_source(r.response());
    c.set_source_hash("hash-" + r.response());
    if (!c.ok())
      c.set_error("no ModelNew in the answer");
    return c;
  }};
}

caf::behavior scripted_scheduler(caf::event_based_actor*, std::shared_ptr<episode_script> script) {
  return {[=](const ExecRequest& r) {
    script->evaluated.push_back(r.request_id());
    ExecResult result;
    result.set_request_id(r.request_id());
    result.set_verdict(OK);
    result.set_speedup(1.5);
    return result;
  }};
}

caf::behavior held_reward(caf::event_based_actor* self, std::shared_ptr<episode_script> script) {
  return {[=](const ExecResult&) -> caf::response_promise {
            script->rewards.push_back(self->make_response_promise());
            return script->rewards.back();
          },
          [=](answer_atom, double total) {
            RewardBreakdown reward;
            reward.set_total(total);
            reward.set_valid(true);
            script->rewards.front().deliver(reward);
            script->rewards.pop_front();
          }};
}

caf::behavior recording_monitor(caf::event_based_actor*, std::shared_ptr<episode_script> script) {
  return {[=](const EpisodeStatus& s) { script->stages.emplace_back(s.turn(), s.stage()); },
          [](const IterationMetrics&) {}};
}

class EpisodeInOrder : public ::testing::Test {
 protected:
  EpisodeInOrder()
      : system(deterministic(cfg)), sched(dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler())) {
    services.inference = caf::actor_cast<inference_actor>(system.spawn(scripted_inference, script));
    services.compiler = caf::actor_cast<compiler_actor>(system.spawn(scripted_compiler));
    services.scheduler = caf::actor_cast<scheduler_actor>(system.spawn(scripted_scheduler, script));
    reward = system.spawn(held_reward, script);
    services.reward = caf::actor_cast<reward_actor>(reward);
    services.monitor = caf::actor_cast<monitor_actor>(system.spawn(recording_monitor, script));
  }
  ~EpisodeInOrder() override {
    for (const auto& a : {caf::actor_cast<caf::actor>(services.inference), caf::actor_cast<caf::actor>(services.compiler),
                          caf::actor_cast<caf::actor>(services.scheduler), reward,
                          caf::actor_cast<caf::actor>(services.monitor)})
      self->send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }
  void release_reward(double total) {
    ASSERT_EQ(script->rewards.size(), 1u) << "not exactly one turn waits for its reward";
    self->send(reward, answer_atom::value, total);
    sched.run();
  }

  caf::actor_system_config cfg;
  caf::actor_system system;
  caf::scheduler::test_coordinator& sched;
  caf::scoped_actor self{system};
  std::shared_ptr<episode_script> script = std::make_shared<episode_script>();
  episode_services services;
  caf::actor reward;
};

// Turn by turn: the next turn's prompt is asked only once the last turn's reward is in; a turn
// whose program does not compile never reaches the scheduler; the monitor sees every stage in
// order; the finished episode holds each turn's reward and its request id is <episode>/t<i>.
TEST_F(EpisodeInOrder, RunsItsTurnsOneAfterAnotherThroughEveryStage) {
  Task task;
  task.set_id("softmax_rows");
  task.set_source("class Model: pass");
  auto episode = spawn_episode(system, services, task);
  EpisodeSpec spec;
  spec.set_episode_id("e1");
  spec.set_task_id("softmax_rows");
  spec.set_turns(3);
  spec.set_seed(7);
  auto done = self->request(episode, caf::infinite, spec);
  sched.run();
  EXPECT_EQ(script->asked.size(), 1u);
  EXPECT_EQ(script->evaluated, std::vector<std::string>{"e1/t0"});
  release_reward(1.0);
  ASSERT_EQ(script->asked.size(), 2u) << "the second turn waited for nothing";
  EXPECT_EQ(script->asked[1].turn(), 1);
  EXPECT_NE(script->asked[0].seed(), script->asked[1].seed());
  EXPECT_EQ(script->evaluated, std::vector<std::string>{"e1/t0"}) << "a program that failed to compile was run";
  release_reward(-0.5);
  ASSERT_EQ(script->asked.size(), 3u);
  EXPECT_EQ(script->evaluated, (std::vector<std::string>{"e1/t0", "e1/t2"}));
  release_reward(2.0);
  Episode finished;
  done.receive([&](const Episode& e) { finished = e; }, [](const caf::error&) { ADD_FAILURE() << "no episode"; });
  ASSERT_EQ(finished.turns_size(), 3);
  EXPECT_EQ(finished.turns(0).reward().total(), 1.0);
  EXPECT_EQ(finished.turns(1).result().verdict(), COMPILE_ERROR);
  EXPECT_EQ(finished.turns(1).reward().total(), -0.5);
  EXPECT_EQ(finished.turns(2).response(), "program 2");
  const std::vector<std::pair<int, EpisodeStage>> expected = {
      {0, INFERENCE}, {0, COMPILE}, {0, EXECUTE}, {0, REWARD},  // turn 0
      {1, INFERENCE}, {1, COMPILE}, {1, REWARD},                // turn 1: no EXECUTE
      {2, INFERENCE}, {2, COMPILE}, {2, EXECUTE}, {2, REWARD},  // turn 2
      {3, DONE}};
  EXPECT_EQ(script->stages, expected);
}


// ---- the API service: the evaluation API's decisions, message by message ----

// A scheduler the test answers: it holds each evaluation's promise, says it has one executor,
// and a cancel answers the held request CANCELLED (true) or finds nothing (false).
caf::behavior api_test_scheduler(caf::event_based_actor* self, std::shared_ptr<executor_log> log) {
  return {
      [=](const ExecRequest& request) -> caf::response_promise {
        log->received.push_back(request.request_id());
        log->held.emplace_back(request.request_id(), self->make_response_promise());
        return log->held.back().second;
      },
      [=](status_atom) {
        SchedulerStatus status;
        status.add_executors()->set_name("local#0");
        return status;
      },
      [=](cancel_atom, const std::string& id) {
        log->cancelled.push_back(id);
        ExecResult result;
        result.set_verdict(CANCELLED);
        return deliver_held(*log, id, result);
      },
      [=](answer_atom, const std::string& id, int verdict) {
        ExecResult result;
        result.set_verdict(static_cast<Verdict>(verdict));
        result.set_executor("local#0");
        if (!deliver_held(*log, id, result))
          ADD_FAILURE() << "the scheduler holds no request " << id;
      },
  };
}

class ApiServiceInOrder : public ::testing::Test {
 protected:
  ApiServiceInOrder()
      : system(deterministic(cfg)), sched(dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler())) {
    Task task;
    task.set_id("softmax_rows");
    task.set_source("class Model: pass");
    suite[task.id()] = task;
    scheduler = system.spawn(api_test_scheduler, log);
  }
  ~ApiServiceInOrder() override {
    self->send_exit(api, caf::exit_reason::user_shutdown);
    self->send_exit(scheduler, caf::exit_reason::user_shutdown);
    sched.run();
  }
  void start(const std::string& secret = "") {
    api_service_config config;
    config.scheduler = caf::actor_cast<scheduler_actor>(scheduler);
    config.suite = &suite;
    config.secret = secret;
    config.outbox = outbox;
    api = spawn_api_service(system, config);
    sched.run();
  }
  static ReplyRoute route(const std::string& client) {
    ReplyRoute r;
    r.add_frames(client);
    return r;
  }
  static EvalRequest request(const std::string& id, const std::string& secret = "") {
    EvalRequest r;
    r.set_request_id(id);
    r.set_task_id("softmax_rows");
    r.set_candidate_source("class ModelNew: pass  # " + id);
    r.set_secret(secret);
    return r;
  }
  void submit(const EvalRequest& r, const std::string& client, const std::string& decode_error = "") {
    self->send(api, submit_atom::value, r, route(client), "test " + client, decode_error);
    sched.run();
  }
  void http(uint64_t id, const std::string& method, const std::string& path, const std::string& body = "") {
    HttpCall call;
    call.set_id(id);
    call.set_method(method);
    call.set_path(path);
    call.set_body(body);
    self->send(api, http_atom::value, call);
    sched.run();
  }
  void answer(const std::string& id, Verdict verdict = OK) {
    self->send(scheduler, answer_atom::value, id, static_cast<int>(verdict));
    sched.run();
  }
  // The ZeroMQ replies in the outbox now, as "client: request id verdict-or-error [duplicate]".
  std::vector<std::string> replies() {
    std::vector<std::string> got;
    for (auto& d : outbox->take()) {
      if (d.http) {
        got.push_back("http " + std::to_string(d.call) + ": " + std::to_string(d.status) + " " + d.body);
        continue;
      }
      const EvalResult& a = d.answer;
      got.push_back(d.route.frames(0) + ": " + a.request_id() + " " +
                    (a.error().empty() ? Verdict_Name(a.result().verdict()) : "error " + a.error()) +
                    (a.duplicate() ? " duplicate" : ""));
    }
    return got;
  }
  ServeStatus status() {
    auto handle = self->request(api, caf::infinite, status_atom::value);
    sched.run();
    ServeStatus s;
    handle.receive([&](const ServeStatus& got) { s = got; }, [&](const caf::error&) { ADD_FAILURE(); });
    return s;
  }

  caf::actor_system_config cfg;
  caf::actor_system system;
  caf::scheduler::test_coordinator& sched;
  caf::scoped_actor self{system};
  std::map<std::string, Task> suite;
  std::shared_ptr<executor_log> log = std::make_shared<executor_log>();
  std::shared_ptr<api_outbox> outbox = std::make_shared<api_outbox>();
  caf::actor scheduler;
  api_service_actor api;
};

// A request sent twice while evaluated runs once and answers both clients (the second marked
// duplicate); sent again once answered, it is answered from the table without an evaluation.
TEST_F(ApiServiceInOrder, EvaluatesARequestOnceAndAnswersEveryClientOfIt) {
  start();
  submit(request("r1"), "a");
  submit(request("r1"), "b");
  submit(request("r2"), "a");
  EXPECT_EQ(log->received, (std::vector<std::string>{"r1", "r2"}));
  EXPECT_TRUE(replies().empty());
  answer("r2", INCORRECT);
  answer("r1");
  EXPECT_EQ(replies(), (std::vector<std::string>{"a: r2 INCORRECT", "a: r1 OK", "b: r1 OK duplicate"}));
  submit(request("r1"), "c");
  EXPECT_EQ(replies(), (std::vector<std::string>{"c: r1 OK duplicate"}));
  EXPECT_EQ(log->received.size(), 2u);
  const ServeStatus s = status();
  EXPECT_EQ(s.answered(), 3);
  EXPECT_EQ(s.requests_in_flight(), 0);
  EXPECT_EQ(s.scheduler().executors_size(), 1);
}

// What cannot be evaluated never reaches the scheduler, and its client hears why.
TEST_F(ApiServiceInOrder, RefusesWhatItCannotEvaluateWithTheReason) {
  start("s3cret");
  submit(request("r1", "wrong"), "a");
  submit(request("r2"), "a", "the frame is neither an EvalRequest nor its JSON");
  EvalRequest unknown = request("r3", "s3cret");
  unknown.set_task_id("no_such_task");
  submit(unknown, "a");
  const auto got = replies();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NE(got[0].find("a: r1 error"), std::string::npos) << got[0];
  EXPECT_NE(got[0].find("secret"), std::string::npos) << got[0];
  EXPECT_EQ(got[1], "a: r2 error the frame is neither an EvalRequest nor its JSON");
  EXPECT_NE(got[2].find("no_such_task"), std::string::npos) << got[2];
  EXPECT_TRUE(log->received.empty());
  EXPECT_EQ(status().refused(), 3);
}

// Over HTTP: a POST is acknowledged (202), a GET says pending until the answer, then has it; a
// DELETE of a request being evaluated has the scheduler cancel it, and its answer is CANCELLED.
TEST_F(ApiServiceInOrder, HttpSubmitPollAndWithdraw) {
  start();
  http(1, "POST", "/v1/evaluations", to_json(request("h1")));
  http(2, "POST", "/v1/evaluations", to_json(request("h2")));
  http(3, "GET", "/v1/evaluations/h1");
  auto got = replies();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].rfind("http 1: 202 ", 0), 0u) << got[0];
  EXPECT_NE(got[0].find("h1"), std::string::npos) << got[0];
  EXPECT_EQ(got[2].rfind("http 3: 202 ", 0), 0u) << got[2];
  answer("h1");
  http(4, "GET", "/v1/evaluations/h1");
  got = replies();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rfind("http 4: 200 ", 0), 0u) << got[0];
  EXPECT_NE(got[0].find("\"OK\""), std::string::npos) << got[0];
  http(5, "DELETE", "/v1/evaluations/h2");
  EXPECT_EQ(log->cancelled, (std::vector<std::string>{"h2"}));
  http(6, "GET", "/v1/evaluations/h2");
  got = replies();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].rfind("http 5: 202 ", 0), 0u) << got[0];
  EXPECT_NE(got[1].find("CANCELLED"), std::string::npos) << got[1];
  http(7, "DELETE", "/v1/evaluations/h1");
  EXPECT_EQ(replies()[0].rfind("http 7: 409 ", 0), 0u);  // answered already: nothing to withdraw
}

// Draining: new requests are refused; the outbox says drained only once the last one in flight
// is answered, at the next tick; an answer its client could not take is sent again at a tick.
TEST_F(ApiServiceInOrder, DrainsWhatIsInFlightAndSendsAnUndeliveredAnswerAgain) {
  start();
  submit(request("r1"), "a");
  self->send(api, drain_atom::value);
  sched.run();
  submit(request("r2"), "b");
  auto got = replies();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("b: r2 error the server is shutting down"), std::string::npos) << got[0];
  sched.advance_time(std::chrono::milliseconds(100));  // a tick: r1 still in flight
  sched.run();
  EXPECT_FALSE(outbox->drained());
  answer("r1");
  auto answers = outbox->take();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].redeliver);
  self->send(api, undelivered_atom::value, answers[0].route, answers[0].answer, int64_t{0});  // its client was away
  sched.run();
  sched.advance_time(std::chrono::milliseconds(600));  // past redeliver_every
  sched.run();
  EXPECT_TRUE(outbox->drained());
  answers = outbox->take();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].answer.request_id(), "r1");
  EXPECT_GT(answers[0].retry_until_ns, 0);  // a redelivery, until its limit
}

}  // namespace
}  // namespace kgym
