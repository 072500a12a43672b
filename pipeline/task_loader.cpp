#include "pipeline/task_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "messages/json.hpp"
#include "pipeline/file_io.hpp"

namespace kgym {

namespace fs = std::filesystem;

namespace {

bool has_kernelbench_shape(const std::string& source) {
  return source.find("class Model") != std::string::npos && source.find("def get_inputs") != std::string::npos &&
         source.find("def get_init_inputs") != std::string::npos;
}

}  // namespace

Task load_task(const std::string& path) {
  fs::path p(path);
  fs::path file = fs::is_directory(p) ? p / "task.py" : p;
  if (!fs::exists(file))
    throw std::runtime_error("no task at " + path + " (expected a KernelBench .py file or a directory with task.py)");
  Task task;
  fs::path meta = file.parent_path() / "task.json";
  if (file.filename() == "task.py" && fs::exists(meta)) {
    auto error = from_json(read_file(meta.string()), &task);
    if (!error.empty())
      throw std::runtime_error(meta.string() + ": " + error);
  }
  task.set_source(read_file(file.string()));
  if (!has_kernelbench_shape(task.source()))
    throw std::runtime_error(file.string() + " is not a KernelBench task: it needs class Model, get_inputs() and "
                                             "get_init_inputs()");
  task.set_path(fs::absolute(file).string());
  if (task.id().empty())
    task.set_id(file.filename() == "task.py" ? fs::absolute(file).parent_path().filename().string()
                                             : file.stem().string());
  return task;
}

std::vector<std::string> find_tasks(const std::string& dir) {
  std::vector<std::string> found;
  if (!fs::is_directory(dir))
    throw std::runtime_error("no task directory at " + dir);
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && fs::exists(entry.path() / "task.py"))
      found.push_back(entry.path().string());
    else if (entry.is_regular_file() && entry.path().extension() == ".py")
      found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

Candidate load_candidate(const std::string& path) {
  fs::path file(path);
  Candidate candidate;
  candidate.set_source(read_file(file.string()));
  candidate.set_path(fs::absolute(file).string());
  candidate.set_id(file.stem().string());
  return candidate;
}

std::vector<std::string> find_candidates(const std::string& task_dir) {
  std::vector<std::string> found;
  fs::path dir = fs::path(task_dir) / "candidates";
  if (!fs::is_directory(dir))
    return found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".py")
      found.push_back(entry.path().string());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace kgym
