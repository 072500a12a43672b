#include "pipeline/embedded_programs.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "pipeline/task_loader.hpp"

namespace kgym {

std::vector<std::pair<std::string, std::string>> embedded_programs(const std::string& task_dir) {
  std::vector<std::pair<std::string, std::string>> programs;
  for (const auto& path : find_candidates(task_dir))
    programs.emplace_back(std::filesystem::path(path).stem().string(), load_candidate(path).source());
  if (programs.empty())
    throw std::invalid_argument(task_dir + " has no candidates/ programs: the embedded policy needs them");
  // The broken answer: the longest program cut after half its lines.
  const auto& longest = *std::max_element(programs.begin(), programs.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  size_t lines = std::count(longest.second.begin(), longest.second.end(), '\n');
  size_t cut = 0;
  for (size_t seen = 0; seen < lines / 2 && cut != std::string::npos; ++seen)
    cut = longest.second.find('\n', cut + 1);
  std::string broken = longest.second.substr(0, cut == std::string::npos ? longest.second.size() / 2 : cut) +
                       "\n    def forward(self, x\n";
  programs.emplace_back("broken", broken);
  std::sort(programs.begin(), programs.end());
  return programs;
}

embedded_suite load_embedded_suite(const std::vector<std::string>& tasks_dirs, const std::set<std::string>& only,
                                   bool with_programs) {
  embedded_suite suite;
  std::string where;
  for (const auto& dir : tasks_dirs) {
    where += (where.empty() ? "" : ", ") + dir;
    for (const auto& path : find_tasks(dir)) {
      Task task = load_task(path);
      if (!only.empty() && !only.count(task.id()))
        continue;
      if (with_programs) {
        auto& programs = suite.programs[task.id()] = embedded_programs(path);
        for (const auto& [action, source] : programs)
          suite.actions[task.id()].push_back(action);
      }
      suite.tasks[task.id()] = std::move(task);
    }
  }
  for (const auto& id : only)
    if (!suite.tasks.count(id))
      throw std::invalid_argument("task '" + id + "' is not in " + where + " (kgym tasks lists them)");
  if (suite.tasks.empty())
    throw std::invalid_argument(std::string("no tasks") + (with_programs ? " with candidates/" : "") + " under " + where);
  return suite;
}

embedded_suite load_embedded_suite(const std::string& tasks_dir, const std::set<std::string>& only) {
  return load_embedded_suite(std::vector<std::string>{tasks_dir}, only, true);
}

}  // namespace kgym
