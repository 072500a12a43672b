#include "actors/learner.hpp"

#include <caf/all.hpp>

#include "pipeline/iteration_metrics.hpp"
#include "pipeline/run_dir.hpp"

namespace kgym {

namespace {

struct learner_state {
  EmbeddedPolicy policy;
  learner_options options;
  static inline const char* name = "learner";
};

learner_actor::behavior_type learner_impl(learner_actor::stateful_pointer<learner_state> self, EmbeddedPolicy policy,
                                          learner_options options) {
  self->state.policy = std::move(policy);
  self->state.options = std::move(options);
  return {
      [self](const IterationBatch& batch) -> IterationMetrics {
        auto& s = self->state;
        LearnerStep step = learner_update(s.policy, batch, s.options.settings);
        IterationMetrics metrics = iteration_metrics(batch, step, s.options.lazy_coverage);
        run_dir::record_iteration(s.options.run_dir, metrics, s.policy);
        self->send(s.options.inference, s.policy);
        self->send(s.options.monitor, metrics);
        return metrics;
      },
  };
}

}  // namespace

learner_actor spawn_learner(caf::actor_system& system, EmbeddedPolicy policy, learner_options options) {
  return system.spawn<caf::detached>(learner_impl, std::move(policy), std::move(options));
}

}  // namespace kgym
