#include "report/line_charts.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "messages/json.hpp"
#include "messages/kgym.pb.h"
#include "pipeline/paths.hpp"

namespace kgym {

namespace fs = std::filesystem;

std::string plot_python() {
  if (const char* python = std::getenv("KGYM_PLOT_PYTHON"); python && *python)
    return python;
  return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

namespace {

PlotSpec spec_of(const std::vector<plot_panel>& panels, const std::string& x_label) {
  PlotSpec spec;
  spec.set_x_label(x_label);
  for (const auto& panel : panels) {
    auto* p = spec.add_panels();
    p->set_title(panel.title);
    for (const auto& series : panel.series) {
      auto* s = p->add_series();
      s->set_name(series.name);
      for (double v : series.values) s->add_values(v);
    }
  }
  return spec;
}

// Runs `argv` (no shell), its stdout and stderr into `output`; its exit status, 127 if it
// could not start.
int run(const std::vector<std::string>& argv, std::string* output) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return 127;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) output->append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid)
    return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

void write_line_charts_png(const std::string& path, const std::vector<plot_panel>& panels, const std::string& x_label) {
  const std::string spec = path + ".spec.json";
  {
    std::ofstream out(spec);
    out << to_json(spec_of(panels, x_label));
    if (!out)
      throw std::runtime_error("cannot write " + spec);
  }
  const std::string python = plot_python();
  std::string output;
  const int status = run({python, (fs::path(kgym_home()) / "report" / "plot_curves.py").string(), spec, path}, &output);
  std::error_code ignored;
  fs::remove(spec, ignored);
  if (status == 0)
    return;
  if (status == 127)
    throw std::runtime_error("cannot run " + python + " to draw " + path +
                             " (set KGYM_PLOT_PYTHON to a Python with matplotlib)");
  if (output.find("No module named 'matplotlib'") != std::string::npos)
    throw std::runtime_error("drawing " + path + " needs matplotlib in " + python +
                             ": apt-get install python3-matplotlib (or set KGYM_PLOT_PYTHON to a Python that has it)");
  throw std::runtime_error("drawing " + path + " failed: " + output.substr(output.size() > 600 ? output.size() - 600 : 0));
}

}  // namespace kgym
