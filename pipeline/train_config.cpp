#include "pipeline/train_config.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "messages/enum_names.hpp"
#include "messages/json.hpp"
#include "policy/openai_wire.hpp"
#include "policy/reward.hpp"

namespace kgym {

TrainConfig default_train_config(Device device) {
  TrainConfig c;
  c.set_iterations(20);
  c.set_group_size(16);
  c.set_turns(3);
  c.set_device(device);
  c.set_seed(1);
  c.set_max_concurrent_episodes(64);
  c.set_max_policy_lag(1);
  c.set_executors(device == CUDA ? 1 : 2);
  c.set_advantage(TRLOO);
  c.set_gamma(1.0);
  c.set_learning_rate(2.0);
  *c.mutable_reward() = default_reward_config();
  c.set_hacking_check(true);
  c.set_prs(true);
  c.set_prs_threshold(0.3);
  c.set_prs_width(0.1);
  c.set_mrs(true);
  c.set_mrs_low(0.999);
  c.set_mrs_high(1.001);
  c.set_mrs_min_token(1e-4);
  c.set_eval_cache(true);
  c.set_context_turns(4);
  c.set_policy(EMBEDDED);
  // The openai backend: a local vLLM-style server by default; the trainer is off until named.
  auto openai = c.mutable_openai();
  openai->set_base_url("http://127.0.0.1:8000/v1");
  openai->set_model("kgym-policy");
  openai->set_temperature(1.0);
  openai->set_top_p(1.0);
  openai->set_token_ids(true);
  *openai = openai_defaults(*openai);
  c.mutable_trainer()->set_timeout_s(3600);
  // The evaluation itself: the sandbox's defaults for this device (eval_defaults).
  auto eval = c.mutable_eval();
  eval->set_apply_cpu_sizes(true);
  eval->set_correctness_trials(device == CUDA ? 5 : 3);
  return c;
}

TrainConfig load_train_config(const std::string& path, Device device) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument("cannot read the config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::string merged;
  std::string error = merge_json(to_json(default_train_config(device), true), text.str(), &merged);
  TrainConfig config;
  if (error.empty())
    error = from_json(merged, &config);
  if (!error.empty())
    throw std::invalid_argument(path + ": " + error + " (kgym train --print-config shows every field)");
  return config;
}

void validate(const TrainConfig& c) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok)
      throw std::invalid_argument("config: " + what);
  };
  // (A name the schema does not know is refused when the file is read; what is left is "unspecified".)
  require(c.device() != DEVICE_UNSPECIFIED, "device must be " + enum_choices<Device>());
  require(c.iterations() >= 1, "iterations must be at least 1");
  require(c.group_size() >= 1, "group_size must be at least 1 (TRLOO needs 2 to have a baseline)");
  require(c.turns() >= 1, "turns must be at least 1");
  require(c.max_concurrent_episodes() >= 1, "max_concurrent_episodes must be at least 1");
  require(c.max_policy_lag() >= 0, "max_policy_lag must be 0 or more");
  require(c.executors() >= 1, "executors must be at least 1");
  require(c.advantage() != ADVANTAGE_UNSPECIFIED, "advantage must be " + enum_choices<Advantage>());
  require(c.gamma() > 0 && c.gamma() <= 1, "gamma must be in (0, 1]");
  require(c.learning_rate() > 0, "learning_rate must be positive");
  require(c.mrs_low() > 0 && c.mrs_low() <= 1 && c.mrs_high() >= 1, "mrs bounds must satisfy 0 < mrs_low <= 1 <= mrs_high");
  require(c.prs_width() > 0, "prs_width must be positive");
  require(c.context_turns() >= 0, "context_turns must be 0 or more");
  require(c.policy() != POLICY_KIND_UNSPECIFIED, "policy must be " + enum_choices<PolicyKind>());
  if (c.policy() == OPENAI) {
    const auto& o = c.openai();
    require(o.api() != OPENAI_API_UNSPECIFIED, "openai.api must be " + enum_choices<OpenAIApi>());
    require(!o.base_url().empty(), "openai.base_url must name the server (e.g. http://127.0.0.1:8000/v1)");
    require(!o.model().empty(), "openai.model must name the served model");
    require(o.temperature() >= 0, "openai.temperature must be 0 or more");
    require(o.weight_reload() != WEIGHT_RELOAD_UNSPECIFIED,
            "openai.weight_reload must be " + enum_choices<WeightReload>());
    require(o.timeout_s() > 0 && o.concurrency() >= 1, "openai.timeout_s and openai.concurrency must be positive");
  }
}

}  // namespace kgym
