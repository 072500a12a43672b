// Messages are data, not leaks: what an evaluation says (its message, log, evidence, trial
// messages) flows into the policy's next prompt and the run's store, so before it leaves the
// executor it is bounded in size and every secret value kgym knows is replaced.
#pragma once

#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

// `text` with every occurrence of each secret replaced by "[redacted]", then cut to
// `max_bytes` (keeping the end, where errors say what went wrong, marked "...").
std::string scrub(std::string text, const std::vector<std::string>& secrets, size_t max_bytes);

// The values of kgym's own environment variables whose names say they are secrets (containing
// SECRET, TOKEN, PASSWORD, PASSWD, API_KEY, ACCESS_KEY or PRIVATE_KEY, any case) or are named in
// `extra_names` (comma-separated, e.g. $KGYM_SECRET_NAMES); values under 6 characters are
// left out (they would redact ordinary words).
std::vector<std::string> secret_values(char** environment, const std::string& extra_names);

// secret_values of this process's environment and $KGYM_SECRET_NAMES, read once.
const std::vector<std::string>& process_secrets();

// Every text of `result` an outsider reads, scrubbed: message and evidence details (4 KiB
// each), trial messages (1 KiB), the log (64 KiB).
void scrub_result(ExecResult* result, const std::vector<std::string>& secrets);

}  // namespace kgym
