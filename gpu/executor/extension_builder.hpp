// The build of a candidate's CUDA extensions (load_inline) ahead of its evaluation, in a
// Python process of its own (kgym_sandbox.builder) beside the zygote: nvcc runs on CPU
// cores while the GPU evaluates other candidates. Libraries go to a cache only kgym
// writes; the zygote copies a candidate's entries into its directory (extension_build.py).
#pragma once

#include <memory>
#include <string>

#include "gpu/executor/sandbox_process.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

// Whether a program may build CUDA extensions (torch.utils.cpp_extension): then its
// load_inline calls are built before its evaluation (CUDA only).
bool uses_extensions(const std::string& source);

// What a failed build makes of the request: COMPILE_ERROR, or INTERNAL_ERROR when the
// failure was kgym's (Built.internal). Empty error: nothing to answer (VERDICT_UNSPECIFIED).
ExecResult build_failure(const ExecRequest& request, const SandboxEvent::Built& built);

class extension_builder {
 public:
  // `launch` as the zygote's (its module is replaced); builds work under `work_root` (empty:
  // a directory of its own, removed with it).
  extension_builder(sandbox_launch launch, std::string cache_dir, std::string work_root);
  ~extension_builder();
  // Every extension the candidate's module asks for, built or found in the cache; starts
  // the builder process on first use and replaces it when it stops answering.
  SandboxEvent::Built build(const ExecRequest& request);
  const std::string& cache_dir() const { return cache_dir_; }

 private:
  sandbox_launch launch_;
  std::string cache_dir_;
  std::string work_root_;
  bool owns_root_ = false;
  std::unique_ptr<sandbox_process> process_;
  int instance_ = 0;  // several builders may share a work root
  int serial_ = 0;
};

}  // namespace kgym
