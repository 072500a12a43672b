// Python's own parser as a static check: no GPU, no import, no execution of the program. One
// long-lived `python -I` process parses every program it is given (a check costs a round trip
// on a socket, not an interpreter's start, ~20 ms), and is started again if it dies.
#pragma once

#include <sys/types.h>

#include <string>

namespace kgym {

class python_syntax_checker {
 public:
  explicit python_syntax_checker(std::string python) : python_(std::move(python)) {}
  ~python_syntax_checker();
  python_syntax_checker(const python_syntax_checker&) = delete;
  python_syntax_checker& operator=(const python_syntax_checker&) = delete;

  // Empty when `source` parses; else why not, in one line ("SyntaxError: ... (line N)").
  // Throws std::runtime_error when Python cannot be run (set --python or KGYM_PYTHON).
  std::string error_of(const std::string& source);
  // The parser's process (-1 before the first check), for the tests.
  pid_t pid() const { return pid_; }

 private:
  void start();
  void stop();
  // One request and its answer line; false if the process went away meanwhile.
  bool ask(const std::string& source, std::string* answer);

  std::string python_;
  pid_t pid_ = -1;
  int socket_ = -1;
};

}  // namespace kgym
