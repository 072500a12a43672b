#include "actors/learner.hpp"

#include <caf/all.hpp>

#include <vector>

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
        std::vector<Episode> episodes(batch.episodes().begin(), batch.episodes().end());
        IterationMetrics metrics = iteration_metrics(episodes, step, s.options.lazy_coverage, batch.wall_s());
        // Metrics first, checkpoint second: a resumed run redoes every iteration whose
        // checkpoint is missing and rewrites its metrics line.
        if (!s.options.run_dir.empty()) {
          run_dir::append_metrics(s.options.run_dir, metrics);
          run_dir::save_checkpoint(s.options.run_dir, s.policy);
        }
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
