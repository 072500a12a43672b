#include "gpu/executor/extension_builder.hpp"
#include "messages/evidence.hpp"

#include "gpu/executor/scrub.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>

namespace kgym {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

bool uses_extensions(const std::string& source) {
  return source.find("cpp_extension") != std::string::npos || source.find("load_inline") != std::string::npos;
}

ExecResult build_failure(const ExecRequest& request, const SandboxEvent::Built& built) {
  if (built.error().empty())
    return ExecResult();
  ExecResult r = result_for(request);
  r.set_verdict(built.internal() ? INTERNAL_ERROR : COMPILE_ERROR);
  r.set_failed_phase(PHASE_COMPILE);
  r.set_message(scrub(built.error(), process_secrets(), 4096));
  (*r.mutable_harness_seconds())["extension_build"] = built.seconds();
  return r;
}

extension_builder::extension_builder(sandbox_launch launch, std::string cache_dir, std::string work_root)
    : launch_(std::move(launch)), cache_dir_(std::move(cache_dir)), work_root_(std::move(work_root)) {
  static std::atomic<int> instances{0};
  instance_ = ++instances;
  const int instance = instance_;
  if (work_root_.empty()) {
    // Named like the evaluator's roots, so a killed kgym's leftovers are removed alike.
    work_root_ = (fs::temp_directory_path() /
                  ("kgym-sandbox-" + std::to_string(::getpid()) + "-build" + std::to_string(instance)))
                     .string();
    owns_root_ = true;
  }
  fs::create_directories(work_root_);
  ::chmod(work_root_.c_str(), 0711);  // the confined builders reach their own directories only
  launch_.module = "kgym_sandbox.builder";
  launch_.log_path = (fs::path(work_root_) / ("builder-" + std::to_string(instance) + ".log")).string();
}

extension_builder::~extension_builder() {
  process_.reset();
  std::error_code ignored;
  if (owns_root_)
    fs::remove_all(work_root_, ignored);
}

SandboxEvent::Built extension_builder::build(const ExecRequest& request) {
  SandboxEvent::Built built;
  built.set_internal(true);
  if (!process_ || !process_->running()) {
    process_ = std::make_unique<sandbox_process>(launch_);
    if (auto error = process_->start(std::chrono::seconds(180)); !error.empty()) {
      process_.reset();
      built.set_error("the extension builder did not start: " + error);
      return built;
    }
  }
  const double limit_s = request.options().compile_timeout_s() > 0 ? request.options().compile_timeout_s() : 600;
  SandboxCommand command;
  auto* build = command.mutable_build();
  build->set_source(request.candidate().source());
  build->set_workdir((fs::path(work_root_) / ("build" + std::to_string(instance_) + "-" + std::to_string(++serial_))).string());
  build->set_cache_dir(cache_dir_);
  build->set_timeout_s(limit_s);
  fs::create_directories(build->workdir());
  SandboxEvent event;
  std::string error;
  // The builder holds its compiles to the limit itself; this one is for the builder.
  const auto deadline =
      clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(limit_s + 60));
  const bool answered = process_->send(command) &&
                        process_->read_event(&event, deadline, &error) == sandbox_process::read_status::event &&
                        event.has_built();
  std::error_code ignored;
  fs::remove_all(build->workdir(), ignored);
  if (!answered) {
    process_.reset();  // replaced at the next build
    built.set_error("the extension builder did not answer " + error);
    return built;
  }
  built = event.built();
  spdlog::info("request {}: {} extension(s) of the candidate, {} built in {:.1f} s{}", request.request_id(),
               built.extensions_size(),
               std::count_if(built.extensions().begin(), built.extensions().end(), [](auto& e) { return !e.cached(); }),
               built.seconds(), built.error().empty() ? "" : ": " + built.error().substr(0, 200));
  return built;
}

}  // namespace kgym
