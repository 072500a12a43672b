#include "cli/sandbox_options.hpp"

#include <cstdlib>

#include "pipeline/paths.hpp"

namespace kgym::cli {

void declare_sandbox_options(command_line& c) {
  c.text("python", "PATH", "the Python with torch and triton (default: python3)")
      .env("KGYM_PYTHON")
      .flag("no-cupti", "on cuda, do not inject the CUPTI profiler (no coverage, no trace)");
}

executor_options sandbox_options(const args& a, Device device) {
  executor_options exec;
  exec.launch.device = device;
  exec.launch.python = a.get("python", "python3");
  exec.launch.sandbox_dir = sandbox_dir();
  if (device == CUDA && !a.has("no-cupti"))
    exec.launch.cupti_library = cupti_library();
  if (device == CUDA)
    exec.launch.checks_library = checks_library();
  if (device == CPU)
    exec.launch.trace_library = trace_library();
  exec.extension_cache = extension_cache_dir();
  if (const char* extra = std::getenv("KGYM_SANDBOX_ENV"))
    exec.launch.extra_env = extra;
  // For diagnosis: every evaluation's CUPTI traces (the candidate's and the reference runner's)
  // are kept in this directory (bench/identity_kernels.py reads them).
  if (const char* archive = std::getenv("KGYM_TRACE_ARCHIVE"); archive && *archive)
    exec.trace_archive = archive;
  return exec;
}

}  // namespace kgym::cli
