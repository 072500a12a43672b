// kgym tasks: list a task directory (the built-in suite by default).
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "pipeline/paths.hpp"
#include "pipeline/task_loader.hpp"

namespace kgym::cli {

int run_tasks(const std::vector<std::string>& argv) {
  auto parsed = command_line("tasks", "[DIR]",
                              "Lists the tasks under DIR (default: the built-in suite) with their\n"
                              "level, shipped candidates and description.\n")
                    .positional("DIR", "a task directory (default: the built-in suite)")
                    .parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  std::string dir = a.positional().empty() ? builtin_tasks_dir() : a.positional().front();
  for (const auto& path : find_tasks(dir)) {
    Task task = load_task(path);
    std::cout << task.id() << "\tlevel " << task.level() << "\t" << find_candidates(path).size() << " candidates\t"
              << task.description() << "\n";
  }
  return 0;
}

}  // namespace kgym::cli
