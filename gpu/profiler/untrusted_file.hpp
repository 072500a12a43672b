// A file in an evaluation's directory that the candidate could have written, removed or
// replaced (its log, its trace), read by the executor, which may be root: never through a
// symbolic link (one to /proc/self/environ would put kgym's own secrets in the result), never
// from a FIFO, socket or device (opening a FIFO would block the executor for good), and never
// more than a bound.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kgym {

// At most `max_bytes` of the regular file at `path` (its last `max_bytes` with `tail`);
// nothing when it is missing, a link, or not a regular file.
std::optional<std::string> read_untrusted_file(const std::string& path, size_t max_bytes, bool tail = false);

}  // namespace kgym
