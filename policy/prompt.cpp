#include "policy/prompt.hpp"

#include <cstdio>

#include "messages/enum_names.hpp"
#include "policy/context.hpp"
#include "policy/reward.hpp"

namespace kgym {

std::optional<std::string> extract_program(const std::string& response) {
  std::optional<std::string> last;
  size_t pos = 0;
  while (true) {
    size_t open = response.find("```", pos);
    if (open == std::string::npos)
      break;
    size_t body = response.find('\n', open);
    if (body == std::string::npos)
      break;
    size_t close = response.find("```", body + 1);
    if (close == std::string::npos)
      break;
    last = response.substr(body + 1, close - body - 1);
    pos = close + 3;
  }
  return last;
}

std::string turn_feedback(const Turn& turn) {
  const ExecResult& r = turn.result();
  std::string text = "verdict: " + Verdict_Name(r.verdict()) + "\n";
  if (!r.message().empty())
    text += "message: " + r.message() + "\n";
  if (r.verdict() == OK) {
    char line[200];
    std::snprintf(line, sizeof line, "speedup: %.3fx (reference %.3f ms, yours %.3f ms)\n", reward_speedup(r),
                  r.reference_time().iqm_ms(), r.candidate_time().iqm_ms());
    text += line;
  }
  if (r.has_profile()) {
    char line[200];
    std::snprintf(line, sizeof line, "profile: %.0f%% of GPU time in your kernels (%s)\n", 100 * r.profile().coverage(),
                  r.profile().evidence_source().c_str());
    text += line;
  }
  for (const auto& e : r.evidence())
    text += "evidence: " + lower_name(e.kind()) + ": " + e.detail() + "\n";
  char line[80];
  std::snprintf(line, sizeof line, "reward: %.3f\n", turn.reward().total());
  return text + line;
}

namespace {
std::string earlier_turn_text(const Turn& t) {
  return "\n## Your answer in turn " + std::to_string(t.index() + 1) + "\n```python\n" +
         extract_program(t.response()).value_or(t.response()) + "\n```\n" + "Feedback:\n" + turn_feedback(t);
}
}  // namespace

std::string build_prompt(const Task& task, const std::vector<Turn>& earlier, size_t context_turns,
                         size_t context_token_budget) {
  std::string prompt =
      "You write Triton kernels. Rewrite the PyTorch program below as class ModelNew with the same\n"
      "interface and results, running its work in your own Triton kernels. Answer with one fenced\n"
      "Python code block.\n\n## Task " + task.id() + "\n```python\n" + task.source() + "\n```\n";
  std::vector<double> rewards;
  std::vector<std::string> texts;
  std::vector<size_t> tokens;
  for (const auto& t : earlier) {
    rewards.push_back(t.reward().total());
    texts.push_back(earlier_turn_text(t));
    tokens.push_back(approx_tokens(texts.back()));
  }
  auto chosen = context_token_budget ? select_context_within(rewards, tokens, context_turns, context_token_budget)
                                     : select_context(rewards, context_turns);
  for (size_t i : chosen)
    prompt += texts[i];
  return prompt;
}

}  // namespace kgym
