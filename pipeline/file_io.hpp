// Whole files in and out, with errors that name the path.
#pragma once

#include <string>

namespace kgym {

// The file's bytes; throws std::runtime_error("cannot read PATH").
std::string read_file(const std::string& path);

// Writes `bytes` to PATH.tmp, then renames it over PATH: a reader sees the old file or the
// new one, never half of one. Throws std::runtime_error("cannot write ...").
void write_atomically(const std::string& path, const std::string& bytes);

}  // namespace kgym
