#include "pipeline/python_syntax.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace kgym {

std::string python_syntax_error(const std::string& python, const std::string& source) {
  char path[] = "/tmp/kgym-syntax-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    throw std::runtime_error("cannot make a temporary file for the syntax check");
  close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out << source;
  }
  std::string command = python +
                        " -I -c 'import ast, sys\n"
                        "try:\n    ast.parse(open(sys.argv[1], encoding=\"utf-8\").read(), \"answer.py\")\n"
                        "except SyntaxError as e:\n    print(f\"SyntaxError: {e.msg} (line {e.lineno})\"); sys.exit(1)\n"
                        "except ValueError as e:\n    print(f\"ValueError: {e}\"); sys.exit(1)' " +
                        path + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::remove(path);
    throw std::runtime_error("cannot run " + python + " for the syntax check");
  }
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe))
    output += buffer;
  int status = pclose(pipe);
  std::remove(path);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw std::runtime_error("python not found (" + python + "): set --python or KGYM_PYTHON");
  while (!output.empty() && output.back() == '\n')
    output.pop_back();
  return output.empty() ? "the program does not parse" : output;
}

}  // namespace kgym
