// Python's own parser as a static check: no GPU, no import, no execution of the program.
#pragma once

#include <string>

namespace kgym {

// Empty when `source` parses; else the SyntaxError as Python prints it (one line).
// Runs `python -I -c ...` on a temporary file; throws std::runtime_error if Python is missing.
std::string python_syntax_error(const std::string& python, const std::string& source);

}  // namespace kgym
