#include "policy/openai_wire.hpp"

#include "messages/json.hpp"
#include "messages/openai_wire.pb.h"

#include <google/protobuf/util/json_util.h>

namespace kgym {

OpenAIConfig openai_defaults(OpenAIConfig c) {
  if (c.api() == OPENAI_API_UNSPECIFIED)
    c.set_api(CHAT);
  if (c.api_key_env().empty())
    c.set_api_key_env("OPENAI_API_KEY");
  if (c.max_tokens() <= 0)
    c.set_max_tokens(4096);
  if (c.concurrency() <= 0)
    c.set_concurrency(16);
  if (c.timeout_s() <= 0)
    c.set_timeout_s(600);
  if (c.retries() < 0)
    c.set_retries(0);
  if (c.backoff_s() <= 0)
    c.set_backoff_s(1.0);
  if (c.system_prompt().empty())
    c.set_system_prompt(default_system_prompt());
  if (c.weight_reload() == WEIGHT_RELOAD_UNSPECIFIED)
    c.set_weight_reload(UPDATE_WEIGHTS_FROM_DISK);
  if (c.prompt_token_budget() <= 0)
    c.set_prompt_token_budget(6000);
  return c;
}

const std::string& default_system_prompt() {
  static const std::string text =
      "You are an expert GPU kernel engineer. You rewrite PyTorch programs as faster Triton kernels "
      "that compute the same results. Answer with exactly one fenced ```python code block that defines "
      "class ModelNew (same constructor and forward signature as Model) and launches your own @triton.jit "
      "kernels for the work; do not call the reference model or return cached results.";
  return text;
}

std::string openai_path(const OpenAIConfig& config) {
  return config.api() == COMPLETIONS ? "/completions" : "/chat/completions";
}

std::string openai_request_body(const OpenAIConfig& config, const std::string& prompt, uint64_t seed) {
  auto fill = [&](auto& r) {
    r.set_model(config.model());
    r.set_temperature(config.temperature());
    r.set_top_p(config.top_p() > 0 ? config.top_p() : 1.0);
    r.set_max_tokens(config.max_tokens());
    if (config.token_ids())
      r.set_return_token_ids(true);
    r.set_seed(static_cast<int32_t>(seed & 0x7fffffff));
  };
  if (config.api() == COMPLETIONS) {
    openai::CompletionRequest r;
    fill(r);
    r.set_prompt(config.system_prompt() + "\n\n" + prompt);
    r.set_logprobs(0);
    return to_json(r);
  }
  openai::ChatRequest r;
  fill(r);
  auto* system = r.add_messages();
  system->set_role("system");
  system->set_content(config.system_prompt());
  auto* user = r.add_messages();
  user->set_role("user");
  user->set_content(prompt);
  r.set_logprobs(true);
  return to_json(r);
}

namespace {

std::optional<int32_t> token_id_of(const std::string& token) {
  const std::string prefix = "token_id:";
  if (token.rfind(prefix, 0) != 0 || token.size() == prefix.size())
    return std::nullopt;
  try {
    size_t used = 0;
    long id = std::stol(token.substr(prefix.size()), &used);
    if (used != token.size() - prefix.size())
      return std::nullopt;
    return static_cast<int32_t>(id);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

Completion parse_openai_response(const OpenAIConfig& config, const std::string& body) {
  Completion c;
  openai::Response response;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(body, &response, options);
  if (!status.ok()) {
    c.set_error("the server's answer is not the OpenAI JSON kgym expects: " + std::string(status.message()) +
                " (body starts: " + body.substr(0, 200) + ")");
    return c;
  }
  if (response.choices_size() == 0) {
    c.set_error("the server's answer has no choices (body starts: " + body.substr(0, 200) + ")");
    return c;
  }
  const openai::Choice& choice = response.choices(0);
  c.set_text(config.api() == COMPLETIONS ? choice.text() : choice.message().content());
  c.set_finish_reason(choice.finish_reason());
  std::vector<std::string> tokens;
  for (const auto& t : choice.logprobs().content()) {
    c.add_logprobs(t.logprob());
    tokens.push_back(t.token());
  }
  for (double lp : choice.logprobs().token_logprobs())
    c.add_logprobs(lp);
  for (const auto& t : choice.logprobs().tokens())
    tokens.push_back(t);
  if (choice.token_ids_size() > 0) {
    c.mutable_token_ids()->CopyFrom(choice.token_ids());
  } else {
    std::vector<int32_t> ids;
    for (const auto& t : tokens)
      if (auto id = token_id_of(t))
        ids.push_back(*id);
    if (!tokens.empty() && ids.size() == tokens.size())
      c.mutable_token_ids()->Add(ids.begin(), ids.end());
  }
  const auto& prompt_ids =
      response.prompt_token_ids_size() > 0 ? response.prompt_token_ids() : choice.prompt_token_ids();
  c.mutable_prompt_token_ids()->CopyFrom(prompt_ids);
  if (auto version = version_from_fingerprint(response.system_fingerprint()))
    c.set_policy_version(*version);
  return c;
}

std::optional<int64_t> version_from_fingerprint(const std::string& fingerprint) {
  const std::string prefix = "kgym-v";
  if (fingerprint.rfind(prefix, 0) != 0 || fingerprint.size() == prefix.size())
    return std::nullopt;
  int64_t version = 0;
  for (size_t i = prefix.size(); i < fingerprint.size(); ++i) {
    if (fingerprint[i] < '0' || fingerprint[i] > '9')
      return std::nullopt;
    version = version * 10 + (fingerprint[i] - '0');
  }
  return version;
}

bool retryable_status(int http_status) {
  return http_status == 0 || http_status == 408 || http_status == 429 || http_status >= 500;
}

}  // namespace kgym
