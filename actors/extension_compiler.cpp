#include "actors/extension_compiler.hpp"

#include <caf/all.hpp>

#include <memory>

#include "gpu/executor/extension_builder.hpp"

namespace kgym {

namespace {

struct extension_compiler_state {
  std::unique_ptr<extension_builder> builder;
  static inline const char* name = "extension_compiler";
};

extension_compiler_actor::behavior_type extension_compiler(
    extension_compiler_actor::stateful_pointer<extension_compiler_state> self, sandbox_launch launch,
    std::string cache_dir, std::string work_root) {
  self->state.builder =
      std::make_unique<extension_builder>(std::move(launch), std::move(cache_dir), std::move(work_root));
  return {
      [self](const ExecRequest& request) -> SandboxEvent::Built { return self->state.builder->build(request); },
  };
}

}  // namespace

extension_compiler_actor spawn_extension_compiler(caf::actor_system& system, sandbox_launch launch,
                                                  std::string cache_dir, std::string work_root) {
  return system.spawn<caf::detached>(extension_compiler, std::move(launch), std::move(cache_dir),
                                     std::move(work_root));
}

}  // namespace kgym
