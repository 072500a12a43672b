#include "pipeline/paths.hpp"

#include <cstdlib>
#include <filesystem>

namespace kgym {

namespace fs = std::filesystem;

std::string kgym_home() {
  if (const char* home = std::getenv("KGYM_HOME"); home && *home)
    return home;
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (int up = 0; up < 6 && !dir.empty(); ++up, dir = dir.parent_path()) {
    if (fs::exists(dir / "gpu" / "sandbox" / "kgym_sandbox" / "zygote.py"))
      return dir.string();
    if (dir == dir.root_path())
      break;
  }
  return KGYM_SOURCE_DIR;
}

std::string sandbox_dir() { return (fs::path(kgym_home()) / "gpu" / "sandbox").string(); }

std::string builtin_tasks_dir() { return (fs::path(kgym_home()) / "tasks").string(); }

namespace {

std::string built_library(const char* env, const std::string& file) {
  if (const char* lib = std::getenv(env); lib && *lib)
    return lib;
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const auto& candidate : {dir / file, dir.parent_path() / file})
    if (fs::exists(candidate))
      return fs::canonical(candidate, ec).string();
  return {};
}

}  // namespace

std::string cupti_library() { return built_library("KGYM_CUPTI_LIB", "libkgym_cupti.so"); }

std::string checks_library() { return built_library("KGYM_CHECKS_LIB", "libkgym_checks.so"); }

std::string trace_library() { return built_library("KGYM_TRACE_LIB", "libkgym_trace.so"); }

std::string extension_cache_dir() {
  if (const char* dir = std::getenv("KGYM_EXTENSION_CACHE"); dir && *dir)
    return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return (fs::path(cache) / "kgym" / "extensions").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "kgym" / "extensions").string();
}

}  // namespace kgym
