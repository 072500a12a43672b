#include "gpu/executor/scrub.hpp"

#include "gpu/executor/name_list.hpp"
#include "messages/ascii_case.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace kgym {

std::string scrub(std::string text, const std::vector<std::string>& secrets, size_t max_bytes) {
  static const std::string redacted = "[redacted]";
  for (const auto& secret : secrets) {
    if (secret.empty())
      continue;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + redacted.size()))
      text.replace(at, secret.size(), redacted);
  }
  if (text.size() > max_bytes)
    text = "..." + text.substr(text.size() - (max_bytes > 3 ? max_bytes - 3 : 0));
  return text;
}

std::vector<std::string> secret_values(char** environment, const std::string& extra_names) {
  static const char* const marks[] = {"SECRET", "TOKEN", "PASSWORD", "PASSWD", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY"};
  const std::vector<std::string> extra = comma_separated(extra_names);
  std::vector<std::string> values;
  for (char** e = environment; e && *e; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq == std::string::npos || entry.size() - eq - 1 < 6)
      continue;
    const std::string name = entry.substr(0, eq), upper = ascii_upper(name);
    bool secret = std::find(extra.begin(), extra.end(), name) != extra.end();
    for (const char* mark : marks)
      secret = secret || upper.find(mark) != std::string::npos;
    if (secret)
      values.push_back(entry.substr(eq + 1));
  }
  return values;
}

const std::vector<std::string>& process_secrets() {
  static const std::vector<std::string> secrets = [] {
    const char* names = std::getenv("KGYM_SECRET_NAMES");
    return secret_values(environ, names ? names : "");
  }();
  return secrets;
}

void scrub_result(ExecResult* result, const std::vector<std::string>& secrets) {
  result->set_message(scrub(result->message(), secrets, 4096));
  result->set_log(scrub(result->log(), secrets, 65536));
  for (auto& evidence : *result->mutable_evidence())
    evidence.set_detail(scrub(evidence.detail(), secrets, 4096));
  for (auto& trial : *result->mutable_trials())
    trial.set_message(scrub(trial.message(), secrets, 1024));
}

}  // namespace kgym
