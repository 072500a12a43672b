#include "actors/inference.hpp"

#include <caf/all.hpp>

#include "policy/embedded_policy.hpp"

namespace kgym {

namespace {

struct inference_state {
  EmbeddedPolicy policy;
  program_set programs;
  static inline const char* name = "inference";
};

Completion complete(const inference_state& state, const GenerateRequest& request) {
  Completion c;
  c.set_policy_version(state.policy.version());
  auto programs = state.programs.find(request.task_id());
  if (programs == state.programs.end()) {
    c.set_error("the embedded policy has no programs for task '" + request.task_id() + "'");
    return c;
  }
  const FeedbackState feedback = request.feedback() == FEEDBACK_STATE_UNSPECIFIED ? FEEDBACK_FIRST : request.feedback();
  auto sample = sample_action(policy_table(state.policy, request.task_id(), feedback), request.seed());
  const auto& [action, source] = programs->second.at(sample.index);
  c.set_action(action);
  c.set_text("Here is my Triton implementation.\n\n```python\n" + source + "```\n");
  c.add_token_ids(sample.index);  // the embedded policy's answer is one token: its choice
  c.add_logprobs(sample.logprob);
  return c;
}

inference_actor::behavior_type embedded_inference(inference_actor::stateful_pointer<inference_state> self,
                                                  EmbeddedPolicy policy, program_set programs) {
  self->state.policy = std::move(policy);
  self->state.programs = std::move(programs);
  return {
      [self](const GenerateRequest& request) -> Completion { return complete(self->state, request); },
      [self](const EmbeddedPolicy& update) {
        if (update.version() > self->state.policy.version())
          self->state.policy = update;
      },
      [](const PolicyVersion&) {},  // the embedded policy's versions come as EmbeddedPolicy
  };
}

}  // namespace

inference_actor spawn_embedded_inference(caf::actor_system& system, EmbeddedPolicy policy, program_set programs) {
  return system.spawn(embedded_inference, std::move(policy), std::move(programs));
}

}  // namespace kgym
