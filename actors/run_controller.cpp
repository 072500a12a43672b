#include "actors/run_controller.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "pipeline/episode_store.hpp"
#include "pipeline/progress_log.hpp"
#include "policy/embedded_policy.hpp"

namespace kgym {

std::string episode_id(int64_t iteration, const std::string& task_id, int index) {
  return "it" + std::to_string(iteration) + "/" + task_id + "/" + std::to_string(index);
}

namespace {

using clock = std::chrono::steady_clock;

struct iteration_progress {
  std::vector<Episode> episodes;
  std::optional<clock::time_point> first_start;  // of its first episode launched here
  std::optional<clock::time_point> last_end;     // of its last episode to finish
};

struct run_controller_state {
  run_plan plan;
  episode_services services;
  learner_actor learner;
  std::deque<EpisodeSpec> to_launch;
  std::map<int64_t, iteration_progress> iterations;
  size_t per_iteration = 0;
  int in_flight = 0;
  int64_t version = 0;         // the policy's version, as the learner reports it
  int64_t next_to_train = 0;   // iterations the learner has taken: rollouts run max_policy_lag ahead
  bool training = false;
  std::unique_ptr<episode_store> store;
  caf::typed_response_promise<IterationMetrics> done;
  IterationMetrics last;
  static inline const char* name = "run_controller";
};

using self_ptr = run_controller_actor::stateful_pointer<run_controller_state>;

void launch(self_ptr self);

void progress_line(const TrainConfig& c, const IterationMetrics& m) {
  progress_log()->info(
      "iteration {}/{}  reward {:.3f}  correct {:.2f}  fast@1.2 last {:.2f} best {:.2f}  hacked {:.2f}  cheat {:.2f}  "
      "lazy {:.2f}  coverage {:.2f}  mrs -{:.0f}% (|log ratio| {:.1e}) prs -{:.0f}%  cache {:.0f}%  {} episodes {:.1f} s",
      m.iteration() + 1, c.iterations(), m.mean_reward(), m.correct_rate(), m.fast1_2_last(), m.fast1_2_best(),
      m.hack_rate(), m.cheat_share(), m.lazy_share(), m.mean_coverage(), 100 * m.mrs_rejected_rate(),
      m.mean_abs_log_ratio(), 100 * m.prs_rejected_rate(), 100 * m.eval_cache_hit_rate(), m.episodes(), m.wall_s());
}

void train_ready(self_ptr self) {
  auto& s = self->state;
  if (s.training || s.next_to_train >= s.plan.config.iterations())
    return;
  auto& it = s.iterations[s.next_to_train];
  if (it.episodes.size() < s.per_iteration)
    return;
  IterationBatch batch;
  batch.set_iteration(s.next_to_train);
  for (auto& e : it.episodes)
    *batch.add_episodes() = std::move(e);
  // The iteration's own span: its first episode's start to its last episode's end (episodes
  // of a resumed run that were already stored have neither).
  batch.set_wall_s(it.first_start && it.last_end
                       ? std::chrono::duration<double>(*it.last_end - *it.first_start).count()
                       : 0.0);
  s.iterations.erase(s.next_to_train);
  s.training = true;
  self->request(s.learner, caf::infinite, batch)
      .then(
          [self](const IterationMetrics& metrics) {
            auto& s = self->state;
            s.training = false;
            s.version = metrics.policy_version();
            s.last = metrics;
            if (!s.plan.quiet)
              progress_line(s.plan.config, metrics);
            if (++s.next_to_train >= s.plan.config.iterations()) {
              s.done.deliver(metrics);
              self->quit();
              return;
            }
            train_ready(self);
            launch(self);
          },
          [self](caf::error& error) {
            self->state.done.deliver(caf::make_error(caf::sec::runtime_error,
                                                     "the learner failed: " + self->system().render(error)));
            self->quit();
          });
}

void episode_finished(self_ptr self, Episode episode) {
  auto& s = self->state;
  --s.in_flight;
  if (s.store)
    s.store->append(episode);  // before anything else: a finished episode is never lost
  auto& it = s.iterations[episode.iteration()];
  it.last_end = clock::now();
  it.episodes.push_back(std::move(episode));
  train_ready(self);
  launch(self);
}

void launch(self_ptr self) {
  auto& s = self->state;
  while (!s.to_launch.empty() && s.in_flight < s.plan.config.max_concurrent_episodes() &&
         s.to_launch.front().iteration() <= s.next_to_train + s.plan.config.max_policy_lag()) {
    EpisodeSpec spec = std::move(s.to_launch.front());
    s.to_launch.pop_front();
    auto& it = s.iterations[spec.iteration()];
    if (!it.first_start)
      it.first_start = clock::now();
    ++s.in_flight;
    auto episode = spawn_episode(self->system(), s.services, s.plan.tasks.at(spec.task_id()));
    std::string id = spec.episode_id();
    self->request(episode, caf::infinite, spec)
        .then([self](Episode& e) { episode_finished(self, std::move(e)); },
              [self, id](caf::error& error) {
                self->state.done.deliver(caf::make_error(
                    caf::sec::runtime_error, "episode " + id + " failed: " + self->system().render(error)));
                self->quit();
              });
  }
}

run_controller_actor::behavior_type run_controller_impl(self_ptr self, run_plan plan, episode_services services,
                                                        learner_actor learner) {
  auto& s = self->state;
  s.plan = std::move(plan);
  s.services = std::move(services);
  s.learner = std::move(learner);
  s.version = s.next_to_train = s.plan.first_iteration;
  s.per_iteration = s.plan.tasks.size() * static_cast<size_t>(s.plan.config.group_size());
  return {
      [self](run_atom) -> caf::typed_response_promise<IterationMetrics> {
        auto& s = self->state;
        s.done = self->make_response_promise<IterationMetrics>();
        if (!s.plan.store_path.empty())
          s.store = std::make_unique<episode_store>(s.plan.store_path);
        const auto& c = s.plan.config;
        for (int64_t iteration = s.plan.first_iteration; iteration < c.iterations(); ++iteration)
          for (const auto& [task_id, task] : s.plan.tasks)
            for (int j = 0; j < c.group_size(); ++j) {
              std::string id = episode_id(iteration, task_id, j);
              auto stored = s.plan.finished.find(id);
              if (stored != s.plan.finished.end()) {
                s.iterations[iteration].episodes.push_back(stored->second);
                continue;
              }
              EpisodeSpec spec;
              spec.set_episode_id(id);
              spec.set_task_id(task_id);
              spec.set_group_id("it" + std::to_string(iteration) + "/" + task_id);
              spec.set_iteration(iteration);
              spec.set_index_in_group(j);
              spec.set_turns(c.turns());
              spec.set_seed(mix_seed(c.seed(), std::hash<std::string>{}(id)));
              s.to_launch.push_back(std::move(spec));
            }
        s.plan.finished.clear();
        if (s.plan.first_iteration >= c.iterations()) {
          s.done.deliver(s.last);
          return s.done;
        }
        train_ready(self);
        launch(self);
        return s.done;
      },
  };
}

}  // namespace

run_controller_actor spawn_run_controller(caf::actor_system& system, run_plan plan, episode_services services,
                                          learner_actor learner) {
  return system.spawn<caf::detached>(run_controller_impl, std::move(plan), std::move(services), std::move(learner));
}

}  // namespace kgym
