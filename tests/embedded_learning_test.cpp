// Exact-value tests of the embedded policy and its learner update, the iteration metrics,
// the prompt/answer handling, the run configuration and the run directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "actors/compiler.hpp"
#include "messages/enum_names.hpp"
#include "messages/json.hpp"
#include "pipeline/content_hash.hpp"
#include "pipeline/episode_store.hpp"
#include "report/eval_report.hpp"
#include "pipeline/file_io.hpp"
#include "pipeline/iteration_metrics.hpp"
#include "report/line_charts.hpp"
#include "pipeline/run_dir.hpp"
#include "pipeline/train_config.hpp"
#include "policy/context.hpp"
#include "policy/embedded_policy.hpp"
#include "policy/learner_update.hpp"
#include "policy/prompt.hpp"
#include "policy/reward.hpp"
#include "runtime/run_resume.hpp"
#include "runtime/training_pipeline.hpp"

namespace kgym {
namespace {

EmbeddedPolicy two_action_policy() { return make_embedded_policy({{"t", {"fused", "cheat"}}}); }

Turn sampled_turn(int action, double logprob, double reward, Verdict verdict = OK, double coverage = 1.0,
                  int64_t version = 0) {
  Turn t;
  t.add_token_ids(action);
  t.add_rollout_logprobs(logprob);
  t.set_feedback(FEEDBACK_FIRST);
  t.set_policy_version(version);
  t.mutable_reward()->set_total(reward);
  t.mutable_reward()->set_valid(true);
  t.mutable_result()->set_verdict(verdict);
  t.mutable_result()->mutable_profile()->set_coverage(coverage);
  return t;
}

Episode one_turn_episode(const std::string& id, const Turn& turn) {
  Episode e;
  e.set_episode_id(id);
  e.set_task_id("t");
  e.set_group_id("g");
  *e.add_turns() = turn;
  return e;
}

TEST(EmbeddedPolicy, StartsUniformAndSamplesRepeatably) {
  auto policy = two_action_policy();
  EXPECT_EQ(policy.tables_size(), static_cast<int>(feedback_states().size()));
  const auto& table = policy_table(policy, "t", FEEDBACK_FIRST);
  EXPECT_EQ(action_probabilities(table), (std::vector<double>{0.5, 0.5}));
  auto a = sample_action(table, 42), b = sample_action(table, 42);
  EXPECT_EQ(a.index, b.index);
  EXPECT_DOUBLE_EQ(a.logprob, std::log(0.5));
  int first = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed)
    first += sample_action(table, seed).index == 0;
  EXPECT_GT(first, 430);  // a fair coin, 1000 draws
  EXPECT_LT(first, 570);
  EXPECT_THROW(policy_table(policy, "t", FEEDBACK_STATE_UNSPECIFIED), std::out_of_range);
  EXPECT_THROW(policy_table(policy, "u", FEEDBACK_FIRST), std::out_of_range);
}

TEST(EmbeddedPolicy, GradientStepIsOnehotMinusProbabilities) {
  auto policy = two_action_policy();
  auto& table = policy_table(policy, "t", FEEDBACK_FIRST);
  policy_gradient_step(table, action_probabilities(table), 0, 2.0);
  EXPECT_DOUBLE_EQ(table.logits(0), 1.0);   // 2 * (1 - 0.5)
  EXPECT_DOUBLE_EQ(table.logits(1), -1.0);  // 2 * (0 - 0.5)
}

TEST(EmbeddedPolicy, FeedbackStates) {
  ExecResult r;
  r.set_verdict(OK);
  EXPECT_EQ(feedback_state(r, 1.3), FEEDBACK_CORRECT_FAST);
  EXPECT_EQ(feedback_state(r, 1.1), FEEDBACK_CORRECT_SLOW);
  r.set_verdict(HACKED);
  EXPECT_EQ(feedback_state(r, 3.0), FEEDBACK_HACKED);
  r.set_verdict(INCORRECT);
  EXPECT_EQ(feedback_state(r, 3.0), FEEDBACK_INCORRECT);
  r.set_verdict(TIMEOUT);
  EXPECT_EQ(feedback_state(r, 0), FEEDBACK_FAILED);
  EXPECT_EQ(feedback_states().size(), 6u);  // every class but the unset value
  EXPECT_EQ(feedback_states().front(), FEEDBACK_FIRST);
  EXPECT_EQ(program_kind("identity"), "cheating");
  EXPECT_EQ(program_kind("cheat_profiler"), "cheating");
  EXPECT_EQ(program_kind("token_kernel"), "lazy");
  EXPECT_EQ(program_kind("fused"), "other");
}

// Stores and checkpoints written before the schema typed the feedback (a string then, under the
// field numbers the legacy_ fields keep) read back with it typed.
TEST(StoredUpgrade, FeedbackWrittenAsAStringReadsBackTyped) {
  Episode old;
  for (const char* state : {"first", "correct_fast", "hacked", "what"})
    old.add_turns()->set_legacy_feedback_state(state);
  const std::string dir = (std::filesystem::temp_directory_path() / ("kgym-upgrade-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  {
    episode_store store(dir + "/episodes.pb");
    store.append(old);
  }
  auto read = read_episodes(dir + "/episodes.pb");
  ASSERT_EQ(read.episodes.size(), 1u);
  std::vector<FeedbackState> states;
  for (const auto& turn : read.episodes[0].turns()) {
    states.push_back(turn.feedback());
    EXPECT_TRUE(turn.legacy_feedback_state().empty());
  }
  EXPECT_EQ(states, (std::vector<FeedbackState>{FEEDBACK_FIRST, FEEDBACK_CORRECT_FAST, FEEDBACK_HACKED,
                                                FEEDBACK_STATE_UNSPECIFIED}));
  EmbeddedPolicy checkpoint = two_action_policy();  // as an earlier kgym saved it
  for (auto& table : *checkpoint.mutable_tables()) {
    table.set_legacy_state(lower_name(table.state()).substr(std::string("feedback_").size()));
    table.clear_state();
  }
  run_dir::save_checkpoint(dir, checkpoint);
  auto loaded = run_dir::latest_checkpoint(dir);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->SerializeAsString(), two_action_policy().SerializeAsString());
  std::filesystem::remove_all(dir);
}

Episode stored_episode(const std::string& id, const std::string& task, int64_t iteration,
                       const std::vector<std::pair<std::string, Verdict>>& turns) {
  Episode e;
  e.set_episode_id(id);
  e.set_task_id(task);
  e.set_iteration(iteration);
  for (const auto& [hash, verdict] : turns) {
    Turn* t = e.add_turns();
    t->set_source_hash(hash);
    t->mutable_result()->set_verdict(verdict);
  }
  return e;
}

TEST(RunResume, StartsAtTheLatestCheckpointKeepsItsFinishedEpisodesAndPreloadsEveryEvaluation) {
  const std::string dir = ::testing::TempDir() + "kgym_resume_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  TrainConfig config = default_train_config();
  run_dir::create(dir, config);
  embedded_suite suite;
  suite.tasks["t"].set_id("t");
  suite.tasks["t"].set_source("class Model: pass");
  suite.actions["t"] = {"fused", "cheat"};

  auto fresh = resume_run(dir, config, suite);  // nothing there yet: a fresh policy from iteration 0
  EXPECT_EQ(fresh.plan.first_iteration, 0);
  EXPECT_EQ(fresh.policy.SerializeAsString(), make_embedded_policy(suite.actions).SerializeAsString());
  EXPECT_TRUE(fresh.plan.finished.empty());
  EXPECT_TRUE(fresh.scheduling.preload.empty());
  EXPECT_EQ(fresh.plan.store_path, run_dir::episodes_path(dir));

  {
    episode_store store(run_dir::episodes_path(dir));
    store.append(stored_episode("e0", "t", 0, {{"h0", OK}}));
    store.append(stored_episode("e1", "t", 1, {{"h1", INCORRECT}}));
    store.append(stored_episode("e2", "t", 2, {{"h2", OK}, {"h3", COMPILE_ERROR}, {"", OK}}));
    store.append(stored_episode("e3", "gone", 2, {{"h4", OK}}));  // a task no longer in the suite
  }
  EmbeddedPolicy checkpoint = make_embedded_policy(suite.actions);
  checkpoint.set_version(2);  // iterations 0 and 1 were trained
  run_dir::save_checkpoint(dir, checkpoint);
  for (int64_t i = 0; i < 3; ++i) {
    IterationMetrics m;
    m.set_iteration(i);
    run_dir::append_metrics(dir, m);
  }

  auto resumed = resume_run(dir, config, suite);
  EXPECT_EQ(resumed.plan.first_iteration, 2);
  EXPECT_EQ(resumed.policy.version(), 2);
  std::vector<std::string> kept;
  for (const auto& [id, e] : resumed.plan.finished)
    kept.push_back(id);
  EXPECT_EQ(kept, (std::vector<std::string>{"e2", "e3"}));  // iteration 2's, not run again
  // Every evaluation the scheduler would have run: not a compile error (the compiler's), not a
  // turn without a program, not a task the suite no longer has.
  std::vector<std::string> preloaded;
  for (const auto& [key, result] : resumed.scheduling.preload)
    preloaded.push_back(key);
  const auto key = [&](const std::string& hash) {
    return evaluation_key(suite.tasks["t"], config.device(), run_eval_options(config), hash);
  };
  EXPECT_EQ(preloaded, (std::vector<std::string>{key("h0"), key("h1"), key("h2")}));
  EXPECT_EQ(resumed.scheduling.preload[1].second.verdict(), INCORRECT);
  EXPECT_EQ(resumed.scheduling.cache, config.eval_cache());
  EXPECT_FALSE(resumed.store_cut);
  ASSERT_EQ(run_dir::read_metrics(dir).size(), 2u);  // iteration 2's line goes: it is run again
  EXPECT_EQ(run_dir::read_metrics(dir).back().iteration(), 1);
  std::filesystem::remove_all(dir);
}

TEST(LearnerUpdate, TrlooGradientMovesTowardTheBetterAnswer) {
  auto policy = two_action_policy();
  IterationBatch batch;
  // Group of two: fused (reward 2) and cheat (reward 0). TRLOO: A = +2 and -2.
  *batch.add_episodes() = one_turn_episode("a", sampled_turn(0, std::log(0.5), 2.0));
  *batch.add_episodes() = one_turn_episode("b", sampled_turn(1, std::log(0.5), 0.0, HACKED));
  learner_settings s;
  s.learning_rate = 1.0;
  LearnerStep step = learner_update(policy, batch, s);
  // Table mean of the two terms: (2 * (1 - .5) + -2 * (0 - .5)) / 2 = 1 for fused, -1 for cheat.
  const auto& table = policy_table(policy, "t", FEEDBACK_FIRST);
  EXPECT_DOUBLE_EQ(table.logits(0), 1.0);
  EXPECT_DOUBLE_EQ(table.logits(1), -1.0);
  EXPECT_EQ(policy.version(), 1);
  EXPECT_EQ(step.version(), 1);
  EXPECT_EQ(step.turns(), 2);
  EXPECT_EQ(step.turns_used(), 2);
  EXPECT_DOUBLE_EQ(step.mean_abs_advantage(), 2.0);
}

TEST(LearnerUpdate, MrsRejectsStaleSamplesAndPrsDropsLazyOnes) {
  auto policy = two_action_policy();
  auto& table = policy_table(policy, "t", FEEDBACK_FIRST);
  table.set_logits(0, 1.0);  // the trainer has moved on since the rollout sampled at 0.5
  policy.set_version(1);
  IterationBatch batch;
  *batch.add_episodes() = one_turn_episode("stale", sampled_turn(0, std::log(0.5), 1.0, OK, 1.0, 0));
  double fresh = std::log(action_probabilities(table)[1]);
  *batch.add_episodes() = one_turn_episode("lazy", sampled_turn(1, fresh, 1.0, OK, 0.1, 1));
  *batch.add_episodes() = one_turn_episode("wrong", sampled_turn(1, fresh, 0.0, INCORRECT, 0.0, 1));
  learner_settings s;
  LearnerStep step = learner_update(policy, batch, s);
  EXPECT_EQ(step.mrs_rejected_turns(), 1);
  EXPECT_EQ(step.mrs_rejected_tokens(), 1);
  EXPECT_EQ(step.prs_rejected_turns(), 1);  // coverage 0.1 < 0.3: keep probability 0
  EXPECT_EQ(step.turns_used(), 1);          // the incorrect turn is always kept
  EXPECT_DOUBLE_EQ(step.mean_staleness(), 1.0 / 3.0);  // versions 0, 1, 1 against 1
  s.mrs = s.prs = false;
  auto again = two_action_policy();
  EXPECT_EQ(learner_update(again, batch, s).turns_used(), 3);
}

TEST(LearnerUpdate, InvalidTurnsGiveNoGradient) {
  auto policy = two_action_policy();
  IterationBatch batch;
  Turn t = sampled_turn(0, std::log(0.5), 0.0, INTERNAL_ERROR);
  t.mutable_reward()->set_valid(false);
  *batch.add_episodes() = one_turn_episode("a", t);
  LearnerStep step = learner_update(policy, batch, learner_settings{});
  EXPECT_EQ(step.invalid_turns(), 1);
  EXPECT_EQ(step.turns_used(), 0);
  EXPECT_EQ(policy_table(policy, "t", FEEDBACK_FIRST).logits(0), 0.0);
}

TEST(IterationMetrics, RatesFromEpisodes) {
  auto turn = [](Verdict v, double speedup, double coverage, const std::string& action, double reward) {
    Turn t;
    t.mutable_result()->set_verdict(v);
    t.mutable_result()->set_speedup(speedup);
    t.mutable_result()->mutable_profile()->set_coverage(coverage);
    t.set_action(action);
    t.mutable_reward()->set_total(reward);
    return t;
  };
  Episode a, b;
  *a.add_turns() = turn(HACKED, 0, 0, "cheat", 0.0);
  *a.add_turns() = turn(OK, 2.0, 1.0, "fused", 2.0);
  *b.add_turns() = turn(OK, 1.0, 0.1, "lazy", 1.0);
  *b.add_turns() = turn(OK, 1.0, 0.1, "lazy", 1.0);
  LearnerStep step;
  step.set_iteration(3);
  step.set_version(4);
  step.set_turns(4);
  step.set_mrs_rejected_turns(1);
  IterationMetrics m = iteration_metrics({a, b}, step, 0.3, 2.0);
  EXPECT_EQ(m.iteration(), 3);
  EXPECT_EQ(m.turns(), 4);
  EXPECT_DOUBLE_EQ(m.mean_reward(), 1.0);
  EXPECT_DOUBLE_EQ(m.correct_rate(), 0.75);
  EXPECT_DOUBLE_EQ(m.hack_rate(), 0.25);
  EXPECT_DOUBLE_EQ(m.cheat_share(), 0.25);
  EXPECT_DOUBLE_EQ(m.lazy_share(), 0.5);
  EXPECT_DOUBLE_EQ(m.lazy_rate(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.mean_coverage(), 0.4);
  EXPECT_DOUBLE_EQ(m.fast1_2_last(), 0.5);
  EXPECT_DOUBLE_EQ(m.fast1_last(), 1.0);
  EXPECT_EQ(m.fast1_2_per_turn(0), 0.0);
  EXPECT_DOUBLE_EQ(m.mrs_rejected_rate(), 0.25);
  EXPECT_DOUBLE_EQ(m.episodes_per_s(), 1.0);
}

TEST(EvalReport, PerTurnLastAndBestOfHistory) {
  auto turn = [](Verdict v, double speedup, double coverage) {
    Turn t;
    t.mutable_result()->set_verdict(v);
    t.mutable_result()->set_speedup(speedup);
    t.mutable_result()->mutable_profile()->set_coverage(coverage);
    return t;
  };
  Episode a, b, c;
  a.set_task_id("x");
  *a.add_turns() = turn(INCORRECT, 0, 0);
  *a.add_turns() = turn(OK, 2.0, 1.0);
  *a.add_turns() = turn(OK, 1.1, 0.1);  // correct, slower, lazy
  b.set_task_id("y");
  *b.add_turns() = turn(HACKED, 0, 0);
  *b.add_turns() = turn(COMPILE_ERROR, 0, 0);  // ended after two turns: stands by this answer
  c.set_task_id("x");
  *c.add_turns() = turn(OK, 1.5, 0.9);
  EvalReport r = eval_report({a, b, c}, 0.3);
  EXPECT_EQ(r.tasks(), 2);
  EXPECT_EQ(r.turns(), 3);
  ASSERT_EQ(r.per_turn_size(), 3);
  EXPECT_DOUBLE_EQ(r.per_turn(0).fast1(), 1.0 / 3);   // c
  EXPECT_DOUBLE_EQ(r.per_turn(0).hacked(), 1.0 / 3);  // b
  EXPECT_DOUBLE_EQ(r.per_turn(1).fast1_2(), 2.0 / 3);  // a (2.0x) and c (1.5x)
  EXPECT_DOUBLE_EQ(r.per_turn(1).hacked(), 0.0);
  EXPECT_DOUBLE_EQ(r.per_turn(2).fast1_2(), 1.0 / 3);  // a fell to 1.1x
  EXPECT_DOUBLE_EQ(r.per_turn(2).lazy(), 0.5);         // a's 0.1 coverage of a and c
  EXPECT_DOUBLE_EQ(r.fast1_2_last(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(r.fast1_2_best(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(r.hack_rate(), 1.0 / 6);
  EXPECT_DOUBLE_EQ(r.correct_rate(), 0.5);
  EXPECT_DOUBLE_EQ(r.lazy_rate(), 1.0 / 3);
  ASSERT_EQ(r.task_rows_size(), 2);
  EXPECT_EQ(r.task_rows(0).task_id(), "x");
  EXPECT_EQ(r.task_rows(0).samples(), 2);
  EXPECT_DOUBLE_EQ(r.task_rows(0).best_speedup(), 2.0);
  EXPECT_DOUBLE_EQ(r.task_rows(0).fast1_2_best(), 1.0);
  EXPECT_EQ(r.task_rows(0).last_verdict(), OK);
  EXPECT_EQ(r.task_rows(1).hacked_turns(), 1);
  EXPECT_NE(eval_markdown(r).find("| 2 | 0.667 | 0.667 | 0.667 | 0.000 | 0.000 |"), std::string::npos)
      << eval_markdown(r);
}

TEST(Context, TopTurnsWithinATokenBudget) {
  // rewards: turn 2 best, then 0, then 3, then 1; sizes in tokens.
  std::vector<double> rewards = {1.0, 0.5, 2.0, 0.8};
  std::vector<size_t> tokens = {100, 10, 300, 50};
  EXPECT_EQ(select_context_within(rewards, tokens, 4, 1000), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(select_context_within(rewards, tokens, 4, 400), (std::vector<size_t>{0, 2}));      // 300 + 100
  EXPECT_EQ(select_context_within(rewards, tokens, 4, 160), (std::vector<size_t>{0, 1, 3}));   // 2 skipped
  EXPECT_EQ(select_context_within(rewards, tokens, 1, 1000), (std::vector<size_t>{2}));
  EXPECT_EQ(approx_tokens("12345"), 2u);
}

TEST(RewardSpeedup, CpuModeUsesTheModeledSpeedup) {
  ExecResult r;
  r.set_verdict(OK);
  r.set_correct(true);
  r.set_speedup(0.01);
  EXPECT_DOUBLE_EQ(reward_speedup(r), 0.01);
  r.mutable_profile()->set_evidence_source("cpu_cost_model");
  r.mutable_profile()->set_modeled_speedup(2.0);
  EXPECT_DOUBLE_EQ(reward_speedup(r), 2.0);
  EXPECT_DOUBLE_EQ(turn_reward(r, default_reward_config()).speedup(), 1.0);
}

TEST(Prompt, LastFencedBlockIsTheProgram) {
  EXPECT_EQ(extract_program("a\n```python\nx = 1\n```\nthen\n```\ny = 2\n```\n").value(), "y = 2\n");
  EXPECT_FALSE(extract_program("no code here").has_value());
  EXPECT_FALSE(extract_program("```python\nunterminated").has_value());
}

TEST(Prompt, CarriesTheTaskAndTheTopEarlierTurns) {
  Task task;
  task.set_id("t");
  task.set_source("class Model: pass");
  std::vector<Turn> earlier;
  for (int i = 0; i < 6; ++i) {
    Turn t;
    t.set_index(i);
    t.set_response("```python\nanswer_" + std::to_string(i) + "\n```");
    t.mutable_reward()->set_total(i == 0 ? 5.0 : 0.1 * i);
    t.mutable_result()->set_verdict(i == 0 ? OK : INCORRECT);
    earlier.push_back(t);
  }
  std::string prompt = build_prompt(task, earlier, 4);
  EXPECT_NE(prompt.find("class Model: pass"), std::string::npos);
  EXPECT_NE(prompt.find("answer_0"), std::string::npos);   // the best
  EXPECT_EQ(prompt.find("answer_1"), std::string::npos);   // 5th best of 6: left out
  EXPECT_NE(prompt.find("answer_5"), std::string::npos);
  EXPECT_NE(prompt.find("verdict: INCORRECT"), std::string::npos);
}

TEST(Compiler, StaticChecks) {
  CompileRequest request;
  request.set_response("I think this works.");
  EXPECT_NE(static_checks(request).error().find("no fenced code block"), std::string::npos);
  request.set_response("```python\nclass Model: pass\n```");
  EXPECT_NE(static_checks(request).error().find("ModelNew"), std::string::npos);
  request.set_response("```python\nclass ModelNew: pass\n```");
  auto r = static_checks(request);
  EXPECT_TRUE(r.error().empty());
  EXPECT_EQ(r.source_hash(), content_hash("class ModelNew: pass\n"));
}

TEST(ContentHash, IsFnv1a) {
  EXPECT_EQ(content_hash(""), "cbf29ce484222325");
  EXPECT_EQ(content_hash("a"), "af63dc4c8601ec8c");
}

TEST(TrainConfig, FileOverlaysDefaultsAndUnknownKeysAreErrors) {
  auto dir = std::filesystem::temp_directory_path() / ("kgym-config-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ok.json") << R"({"iterations": 3, "reward": {"coverage_weight": 0}, "advantage": "grpo"})";
  TrainConfig c = load_train_config((dir / "ok.json").string());
  EXPECT_EQ(c.iterations(), 3);
  EXPECT_EQ(c.reward().coverage_weight(), 0.0);
  EXPECT_EQ(c.reward().speedup_cap(), 3.0);  // kept from the defaults
  EXPECT_EQ(c.group_size(), 16);
  EXPECT_EQ(c.advantage(), GRPO);
  EXPECT_NO_THROW(validate(c));
  std::ofstream(dir / "bad.json") << R"({"iteratons": 3})";
  EXPECT_THROW(load_train_config((dir / "bad.json").string()), std::invalid_argument);
  std::ofstream(dir / "ppo.json") << R"({"advantage": "ppo"})";  // a name the schema does not have
  EXPECT_THROW(load_train_config((dir / "ppo.json").string()), std::invalid_argument);
  c.set_advantage(ADVANTAGE_UNSPECIFIED);
  try {
    validate(c);
    ADD_FAILURE() << "an unspecified advantage passed";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "config: advantage must be trloo or grpo");
  }
  // Config files written before these fields were enums name their values in lower case; the
  // run's own config.json (written by kgym, upper case) reads back the same.
  std::ofstream(dir / "old.json") << R"({"device": "cuda", "policy": "openai", "openai": {"api": "completions",
    "weight_reload": "none"}})";
  TrainConfig old = load_train_config((dir / "old.json").string());
  EXPECT_EQ(old.device(), CUDA);
  EXPECT_EQ(old.policy(), OPENAI);
  EXPECT_EQ(old.openai().api(), COMPLETIONS);
  EXPECT_EQ(old.openai().weight_reload(), NONE);
  EXPECT_EQ(old.advantage(), TRLOO);  // the default's
  std::ofstream(dir / "written.json") << to_json(old, true);
  EXPECT_EQ(load_train_config((dir / "written.json").string()).SerializeAsString(), old.SerializeAsString());
  std::filesystem::remove_all(dir);
}

TEST(RunDir, CheckpointsAndMetricsSurviveAndTruncate) {
  auto dir = (std::filesystem::temp_directory_path() / ("kgym-run-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  run_dir::create(dir, default_train_config());
  EXPECT_THROW(run_dir::create(dir, default_train_config()), std::invalid_argument);
  EXPECT_EQ(run_dir::read_config(dir).iterations(), 20);
  EXPECT_FALSE(run_dir::latest_checkpoint(dir).has_value());
  auto policy = two_action_policy();
  for (int v = 1; v <= 3; ++v) {
    policy.set_version(v);
    run_dir::save_checkpoint(dir, policy);
    IterationMetrics m;
    m.set_iteration(v - 1);
    run_dir::append_metrics(dir, m);
  }
  EXPECT_EQ(run_dir::latest_checkpoint(dir)->version(), 3);
  std::ofstream(run_dir::metrics_path(dir), std::ios::app) << "{\"iteration\": 3, \"mean_rew";  // cut by a kill
  EXPECT_EQ(run_dir::read_metrics(dir).size(), 3u);
  run_dir::keep_metrics_before(dir, 2);
  auto kept = run_dir::read_metrics(dir);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept.back().iteration(), 1);
  std::filesystem::remove_all(dir);
}

// The width and height a PNG's IHDR states.
std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  auto word = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(png[at + i]);
    return v;
  };
  return {word(16), word(20)};
}

// report/plot_curves.py through matplotlib: a PNG with two columns of panels, NaN a gap; a
// Python without matplotlib gives an error that says what to install.
TEST(LineCharts, MatplotlibDrawsThePanels) {
  const std::string dir = std::filesystem::temp_directory_path() / ("kgym-charts-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const double gap = std::nan("");
  write_line_charts_png(dir + "/curves.png",
                        {{"reward", {{"reward", {0.1, 0.2, gap, 0.4}}}},
                         {"rates", {{"correct", {0.5, 0.6, 0.7, 0.8}}, {"hacked", {0, 0, 0.1, 0}}}},
                         {"throughput", {{"episodes/s", {1, 2, 3, 4}}}}});
  const std::string png = read_file(dir + "/curves.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  const auto [width, height] = png_size(png);
  EXPECT_EQ(width, 1280u) << "two columns of 6.4 in at 100 dpi";
  EXPECT_EQ(height, 640u) << "two rows of 3.2 in at 100 dpi";
  EXPECT_FALSE(std::filesystem::exists(dir + "/curves.png.spec.json")) << "the spec outlived the drawing";

  ::setenv("KGYM_PLOT_PYTHON", "/nonexistent/python3", 1);
  try {
    write_line_charts_png(dir + "/none.png", {});
    ADD_FAILURE() << "no error without a Python";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("KGYM_PLOT_PYTHON"), std::string::npos) << e.what();
  }
  ::unsetenv("KGYM_PLOT_PYTHON");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kgym
