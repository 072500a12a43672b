// The openai inference backend: an event-based front that spreads requests over detached
// callers (blocking HTTP, one request at a time each) and reloads weights on new versions.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "actors/inference.hpp"
#include "messages/json.hpp"
#include "messages/openai_wire.pb.h"
#include "policy/http_client.hpp"
#include "policy/openai_wire.hpp"

namespace kgym {

namespace {

struct server_access {
  OpenAIConfig config;   // with its defaults
  http_url url;
  http_headers headers;  // the API key, when the environment holds one
};

server_access access_of(const OpenAIConfig& config) {
  server_access server;
  server.config = openai_defaults(config);
  std::string error;
  auto url = parse_http_url(server.config.base_url(), &error);
  if (!url)
    throw std::invalid_argument("openai.base_url: " + error);
  server.url = *url;
  if (const char* key = std::getenv(server.config.api_key_env().c_str()); key && *key)
    server.headers.push_back({"Authorization", std::string("Bearer ") + key});
  return server;
}

// One request, with retries: what the turn records (text, tokens, log-probs) or why not.
Completion ask_server(const server_access& server, const GenerateRequest& request, const std::string& model,
                      int64_t version) {
  OpenAIConfig config = server.config;
  config.set_model(model);
  std::string body = openai_request_body(config, request.prompt(), request.seed());
  double wait_s = config.backoff_s();
  std::string last_error;
  for (int attempt = 0; attempt <= config.retries(); ++attempt) {
    if (attempt > 0) {
      spdlog::warn("openai: {} turn {}: attempt {} failed ({}); retrying in {:.1f} s", request.episode_id(),
                   request.turn(), attempt, last_error, wait_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
      wait_s *= 2;
    }
    http_reply reply = http_post_json(server.url, openai_path(config), body, server.headers, config.timeout_s());
    if (reply.status == 200) {
      Completion c = parse_openai_response(config, reply.body);
      if (c.policy_version() == 0)
        c.set_policy_version(version);
      return c;
    }
    last_error = describe_failure(reply);
    if (!retryable_status(reply.status))
      break;
  }
  Completion failed;
  failed.set_policy_version(version);
  failed.set_error("the model server did not answer (" + last_error + ")");
  return failed;
}

using caller_actor = caf::typed_actor<caf::replies_to<GenerateRequest, std::string, int64_t>::with<Completion>,
                                      caf::replies_to<PolicyVersion>::with<std::string>>;

caller_actor::behavior_type caller(caller_actor::pointer self, server_access server) {
  return {
      [server](const GenerateRequest& request, const std::string& model, int64_t version) {
        return ask_server(server, request, model, version);
      },
      // SGLang's endpoint at the server's root; kgym's reference server answers it too.
      [server](const PolicyVersion& version) -> std::string {
        openai::UpdateWeightsRequest update;
        update.set_model_path(version.weights_path());
        http_url root = server.url;
        if (root.path.size() >= 3 && root.path.compare(root.path.size() - 3, 3, "/v1") == 0)
          root.path.resize(root.path.size() - 3);
        http_reply reply = http_post_json(root, "/update_weights_from_disk", to_json(update), server.headers,
                                          server.config.timeout_s());
        return reply.status == 200 ? std::string{} : describe_failure(reply);
      },
  };
}

struct openai_state {
  OpenAIConfig config;
  std::vector<caller_actor> callers;
  std::vector<int> in_flight;
  caller_actor reloader;
  std::string model;
  int64_t version = 0;
  // While the server loads new weights, requests wait: rollouts after an update use it.
  bool reloading = false;
  std::vector<std::pair<GenerateRequest, caf::typed_response_promise<Completion>>> waiting;
  static inline const char* name = "inference";
};

using openai_self = inference_actor::stateful_pointer<openai_state>;

void dispatch(openai_self self, const GenerateRequest& request, caf::typed_response_promise<Completion> promise) {
  auto& s = self->state;
  size_t pick = 0;
  for (size_t i = 1; i < s.callers.size(); ++i)
    if (s.in_flight[i] < s.in_flight[pick])
      pick = i;
  ++s.in_flight[pick];
  self->request(s.callers[pick], caf::infinite, request, s.model, s.version)
      .then(
          [self, pick, promise](const Completion& c) mutable {
            --self->state.in_flight[pick];
            promise.deliver(c);
          },
          [self, pick, promise](caf::error& error) mutable {
            --self->state.in_flight[pick];
            Completion failed;
            failed.set_error("the inference caller failed: " + self->system().render(error));
            promise.deliver(failed);
          });
}

void reloaded(openai_self self) {
  auto& s = self->state;
  s.reloading = false;
  auto waiting = std::move(s.waiting);
  s.waiting.clear();
  for (auto& [request, promise] : waiting)
    dispatch(self, request, promise);
}

inference_actor::behavior_type openai_inference(openai_self self,
                                                server_access server, int64_t version) {
  auto& s = self->state;
  s.config = server.config;
  s.model = server.config.model();
  s.version = version;
  // Linked: the callers end with the front (after the call each may be in).
  for (int i = 0; i < server.config.concurrency(); ++i) {
    s.callers.push_back(self->spawn<caf::detached + caf::linked>(caller, server));
    s.in_flight.push_back(0);
  }
  s.reloader = self->spawn<caf::detached + caf::linked>(caller, server);
  return {
      [self](const GenerateRequest& request) -> caf::typed_response_promise<Completion> {
        auto promise = self->make_response_promise<Completion>();
        if (self->state.reloading)
          self->state.waiting.emplace_back(request, promise);
        else
          dispatch(self, request, promise);
        return promise;
      },
      [](const EmbeddedPolicy&) {},  // not this backend's kind of policy
      [self](const PolicyVersion& update) {
        auto& s = self->state;
        if (update.version() <= s.version)
          return;
        if (s.config.weight_reload() == NONE) {
          s.version = update.version();
          return;
        }
        if (s.config.weight_reload() == MODEL_NAME) {
          s.model = update.model().empty() ? s.model : update.model();
          s.version = update.version();
          return;
        }
        s.reloading = true;
        self->request(s.reloader, caf::infinite, update)
            .then(
                [self, update](const std::string& error) {
                  if (!error.empty()) {
                    spdlog::error("openai: the server did not load version {} from {} ({}); rollouts keep version {}",
                                  update.version(), update.weights_path(), error, self->state.version);
                  } else {
                    spdlog::info("openai: the server now serves version {} ({})", update.version(),
                                 update.weights_path());
                    self->state.version = std::max(self->state.version, update.version());
                  }
                  reloaded(self);
                },
                [self](caf::error& error) {
                  spdlog::error("openai: the weight reload failed: {}", self->system().render(error));
                  reloaded(self);
                });
      },
  };
}

}  // namespace

inference_actor spawn_openai_inference(caf::actor_system& system, const OpenAIConfig& config, int64_t version) {
  return system.spawn(openai_inference, access_of(config), version);
}

void check_openai_server(const OpenAIConfig& config) {
  server_access server = access_of(config);
  const OpenAIConfig& o = server.config;
  http_reply reply = http_get(server.url, "/models", server.headers, 10.0);
  if (reply.status == 0)
    throw std::invalid_argument("cannot reach the model server at " + o.base_url() + " (" + reply.error +
                                "); start it (e.g. vllm serve MODEL, or deploy/trainer/serve_model.py) or fix "
                                "--openai-url");
  if (reply.status == 401 || reply.status == 403)
    throw std::invalid_argument("the model server at " + o.base_url() + " refused the API key (HTTP " +
                                std::to_string(reply.status) + "); set $" + o.api_key_env());
  if (reply.status == 200 && reply.body.find("\"" + o.model() + "\"") == std::string::npos)
    spdlog::warn("the model server at {} does not list model '{}' (its /models: {})", o.base_url(), o.model(),
                 reply.body.substr(0, 300));
}

}  // namespace kgym
