#include "actors/gpu_executor.hpp"

#include <caf/all.hpp>

#include <memory>

namespace kgym {

namespace {

struct gpu_executor_state {
  std::unique_ptr<sandbox_evaluator> evaluator;
  static inline const char* name = "gpu_executor";
};

gpu_executor_actor::behavior_type gpu_executor_impl(
    gpu_executor_actor::stateful_pointer<gpu_executor_state> self, executor_options options) {
  self->state.evaluator = std::make_unique<sandbox_evaluator>(std::move(options));
  return {
      [self](const ExecRequest& request) -> ExecResult { return self->state.evaluator->evaluate(request); },
  };
}

}  // namespace

gpu_executor_actor spawn_gpu_executor(caf::actor_system& system, executor_options options) {
  return system.spawn<caf::detached>(gpu_executor_impl, std::move(options));
}

}  // namespace kgym
