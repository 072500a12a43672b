// inference: the policy backend. Answers a prompt with a completion (text, token ids,
// log-probabilities, the policy version that sampled it) and takes new policy versions
// from the learner: the embedded policy's new tables, or an external trainer's new weights.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using inference_actor = caf::typed_actor<caf::replies_to<GenerateRequest>::with<Completion>,
                                         caf::reacts_to<EmbeddedPolicy>, caf::reacts_to<PolicyVersion>>;

// A task's programs for the embedded policy: (action name, Python source), in table order.
using program_set = std::map<std::string, std::vector<std::pair<std::string, std::string>>>;

// The embedded backend: samples a program from the policy's table for (task, feedback state).
inference_actor spawn_embedded_inference(caf::actor_system& system, EmbeddedPolicy policy, program_set programs);

// The openai backend: asks an OpenAI-compatible server, `config.concurrency` requests at a
// time (each on its own detached caller, retrying 429/5xx/timeouts with backoff); a failure
// is a Completion with `error`. A PolicyVersion makes the server load the new weights
// (config.weight_reload) before later answers carry its version.
inference_actor spawn_openai_inference(caf::actor_system& system, const OpenAIConfig& config, int64_t version);

// Before a run: the server must answer GET /models. Throws std::invalid_argument saying what
// to do when it cannot be reached or refuses the API key; warns when it does not list the model.
void check_openai_server(const OpenAIConfig& config);

}  // namespace kgym
