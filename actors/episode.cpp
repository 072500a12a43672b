#include "actors/episode.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <vector>

#include "messages/ids.hpp"
#include "policy/embedded_policy.hpp"
#include "policy/prompt.hpp"
#include "policy/reward.hpp"

namespace kgym {

namespace {

struct episode_state {
  episode_services services;
  Task task;
  EpisodeSpec spec;
  Episode episode;
  Turn turn;  // the turn in progress
  FeedbackState feedback = FEEDBACK_FIRST;
  caf::typed_response_promise<Episode> done;
  std::chrono::steady_clock::time_point started;
  static inline const char* name = "episode";
};

using self_ptr = episode_actor::stateful_pointer<episode_state>;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void report(self_ptr self, EpisodeStage stage) {
  const auto& s = self->state;
  EpisodeStatus status;
  status.set_episode_id(s.spec.episode_id());
  status.set_task_id(s.spec.task_id());
  status.set_iteration(s.spec.iteration());
  status.set_turn(s.episode.turns_size());
  status.set_turns(s.spec.turns());
  status.set_stage(stage);
  if (s.episode.turns_size() > 0) {
    const Turn& last = s.episode.turns(s.episode.turns_size() - 1);
    status.set_last_verdict(last.result().verdict());
    status.set_last_reward(last.reward().total());
    status.set_last_action(last.action());
  }
  status.set_updated_unix_s(unix_now());
  status.set_elapsed_s(std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count());
  self->send(s.services.monitor, status);
}

// A turn that ended before the sandbox (no answer, no program): its result says why.
ExecResult failed_before_execution(const Task& task, Verdict verdict, const std::string& message) {
  ExecResult r;
  r.set_verdict(verdict);
  r.set_task_id(task.id());
  r.set_message(message);
  return r;
}

void next_turn(self_ptr self);

void finish_turn(self_ptr self, const RewardBreakdown& reward) {
  auto& s = self->state;
  *s.turn.mutable_reward() = reward;
  s.feedback = feedback_state(s.turn.result(), reward_speedup(s.turn.result()));
  *s.episode.add_turns() = std::move(s.turn);
  s.turn.Clear();
  next_turn(self);
}

void score(self_ptr self, const ExecResult& result) {
  self->state.turn.set_cached(result.from_cache());
  *self->state.turn.mutable_result() = result;
  report(self, REWARD);
  self->request(self->state.services.reward, caf::infinite, result)
      .then([self](const RewardBreakdown& reward) { finish_turn(self, reward); },
            [self](caf::error& error) {
              RewardBreakdown invalid;
              invalid.set_reason("the reward actor failed: " + self->system().render(error));
              finish_turn(self, invalid);
            });
}

void execute(self_ptr self, const CompileResult& compiled) {
  auto& s = self->state;
  s.turn.set_source_hash(compiled.source_hash());
  if (!compiled.ok()) {
    score(self, failed_before_execution(s.task, COMPILE_ERROR, compiled.error()));
    return;
  }
  ExecRequest request;
  request.set_request_id(turn_id(s.spec.episode_id(), s.turn.index()));
  *request.mutable_task() = s.task;
  request.mutable_candidate()->set_id(s.turn.action().empty() ? "turn" + std::to_string(s.turn.index())
                                                              : s.turn.action());
  request.mutable_candidate()->set_source(compiled.source());
  request.set_device(s.services.device);
  *request.mutable_options() = s.services.options;
  report(self, EXECUTE);
  self->request(s.services.scheduler, caf::infinite, request)
      .then([self](const ExecResult& result) { score(self, result); },
            [self](caf::error& error) {
              score(self, failed_before_execution(self->state.task, INTERNAL_ERROR,
                                                  "the scheduler failed: " + self->system().render(error)));
            });
}

void compile(self_ptr self, const Completion& completion) {
  auto& s = self->state;
  s.turn.set_response(completion.text());
  s.turn.mutable_token_ids()->CopyFrom(completion.token_ids());
  s.turn.mutable_rollout_logprobs()->CopyFrom(completion.logprobs());
  s.turn.mutable_prompt_token_ids()->CopyFrom(completion.prompt_token_ids());
  s.turn.set_policy_version(completion.policy_version());
  s.turn.set_action(completion.action());
  if (!completion.error().empty()) {
    score(self, failed_before_execution(s.task, INTERNAL_ERROR, "inference failed: " + completion.error()));
    return;
  }
  CompileRequest request;
  request.set_task_id(s.task.id());
  request.set_response(completion.text());
  report(self, COMPILE);
  self->request(s.services.compiler, caf::infinite, request)
      .then([self](const CompileResult& compiled) { execute(self, compiled); },
            [self](caf::error& error) {
              CompileResult failed;
              failed.set_error("the compiler failed: " + self->system().render(error));
              execute(self, failed);
            });
}

void next_turn(self_ptr self) {
  auto& s = self->state;
  if (s.episode.turns_size() >= s.spec.turns()) {
    s.episode.set_wall_s(std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count());
    report(self, DONE);
    s.done.deliver(s.episode);
    self->quit();
    return;
  }
  std::vector<Turn> earlier(s.episode.turns().begin(), s.episode.turns().end());
  s.turn.set_index(s.episode.turns_size());
  s.turn.set_feedback(s.feedback);
  s.turn.set_prompt(build_prompt(s.task, earlier, static_cast<size_t>(s.services.context_turns),
                                    static_cast<size_t>(s.services.context_token_budget)));
  GenerateRequest request;
  request.set_episode_id(s.spec.episode_id());
  request.set_task_id(s.task.id());
  request.set_turn(s.turn.index());
  request.set_prompt(s.turn.prompt());
  request.set_feedback(s.feedback);
  request.set_seed(mix_seed(s.spec.seed(), static_cast<uint64_t>(s.turn.index())));
  report(self, INFERENCE);
  self->request(s.services.inference, caf::infinite, request)
      .then([self](const Completion& completion) { compile(self, completion); },
            [self](caf::error& error) {
              Completion failed;
              failed.set_error(self->system().render(error));
              compile(self, failed);
            });
}

episode_actor::behavior_type episode_impl(self_ptr self, episode_services services, Task task) {
  self->state.services = std::move(services);
  self->state.task = std::move(task);
  return {
      [self](const EpisodeSpec& spec) -> caf::typed_response_promise<Episode> {
        auto& s = self->state;
        s.spec = spec;
        s.episode.set_episode_id(spec.episode_id());
        s.episode.set_task_id(spec.task_id());
        s.episode.set_group_id(spec.group_id());
        s.episode.set_iteration(spec.iteration());
        s.episode.set_index_in_group(spec.index_in_group());
        s.started = std::chrono::steady_clock::now();
        s.done = self->make_response_promise<Episode>();
        next_turn(self);
        return s.done;
      },
  };
}

}  // namespace

episode_actor spawn_episode(caf::actor_system& system, episode_services services, Task task) {
  return system.spawn(episode_impl, std::move(services), std::move(task));
}

}  // namespace kgym
