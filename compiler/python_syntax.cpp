#include "compiler/python_syntax.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace kgym {

namespace {

// Reads "<length>\n<bytes>" requests on stdin and answers each with one line: "=" and then
// nothing (it parses) or why not.
constexpr const char* parser_script = R"PY(import ast, sys
source, out = sys.stdin.buffer, sys.stdout
while True:
    header = source.readline()
    if not header:
        break
    data = source.read(int(header))
    try:
        ast.parse(data.decode("utf-8"), "answer.py")
        why = ""
    except SyntaxError as e:
        why = f"SyntaxError: {e.msg} (line {e.lineno})"
    except ValueError as e:
        why = f"ValueError: {e}"
    except (RecursionError, MemoryError) as e:
        why = f"{type(e).__name__}: the program is too deeply nested or too large to parse"
    out.write("=" + why.replace("\n", " ") + "\n")
    out.flush()
)PY";

bool send_all(int fd, const std::string& data) {
  for (size_t sent = 0; sent < data.size();) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

python_syntax_checker::~python_syntax_checker() { stop(); }

void python_syntax_checker::start() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    throw std::runtime_error(std::string("the syntax check: socketpair: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 0);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, pair[1], 1);
  std::vector<std::string> args = {python_, "-I", "-c", parser_script};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const int failed = ::posix_spawnp(&pid_, python_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pair[1]);
  if (failed != 0) {
    ::close(pair[0]);
    pid_ = -1;
    throw std::runtime_error("python not found (" + python_ + "): set --python or KGYM_PYTHON");
  }
  socket_ = pair[0];
}

void python_syntax_checker::stop() {
  if (socket_ >= 0)
    ::close(socket_);  // its stdin ends: it exits
  socket_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

bool python_syntax_checker::ask(const std::string& source, std::string* answer) {
  if (!send_all(socket_, std::to_string(source.size()) + "\n" + source))
    return false;
  answer->clear();
  char c;
  for (;;) {
    const ssize_t n = ::recv(socket_, &c, 1, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    if (c == '\n')
      return !answer->empty() && (*answer)[0] == '=';
    *answer += c;
  }
}

std::string python_syntax_checker::error_of(const std::string& source) {
  std::string answer;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (pid_ < 0)
      start();
    if (ask(source, &answer))
      return answer.substr(1);
    stop();  // it died (or never ran: a Python that cannot start exits at once); once more
  }
  // It died twice on this program: the program's doing if a fresh one answers an empty one.
  start();
  if (ask("", &answer))
    return "the program does not parse (Python's parser failed on it)";
  stop();
  throw std::runtime_error("python (" + python_ + ") did not answer the syntax check: is it a Python 3?");
}

}  // namespace kgym
