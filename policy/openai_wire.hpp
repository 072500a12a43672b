// The OpenAI-compatible wire format of the `openai` inference backend: the request body for a
// prompt, and a Completion from the server's answer. Pure functions; the HTTP calls and
// retries live in actors/openai_inference.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "messages/kgym.pb.h"

namespace kgym {

// The config with every unset field at its default (see OpenAIConfig in kgym.proto).
OpenAIConfig openai_defaults(OpenAIConfig config);

// kgym's system message: what the model is and how it must answer.
const std::string& default_system_prompt();

// "/chat/completions" or "/completions" (relative to the base URL's /v1).
std::string openai_path(const OpenAIConfig& config);

// The JSON body asking for one sampled answer with its log-probabilities.
std::string openai_request_body(const OpenAIConfig& config, const std::string& prompt, uint64_t seed);

// The Completion in a 200 answer's body; `error` is set when it is not one (malformed JSON,
// no choices). Token ids come from vLLM's `token_ids`, or from "token_id:N" log-prob tokens.
Completion parse_openai_response(const OpenAIConfig& config, const std::string& body);

// The policy version a server reports in `system_fingerprint` ("kgym-v<N>"), if it does.
std::optional<int64_t> version_from_fingerprint(const std::string& fingerprint);

// Whether a failed attempt is worth repeating: refused connections, timeouts, 408, 429, 5xx.
bool retryable_status(int http_status);

}  // namespace kgym
