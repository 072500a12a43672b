#include "runtime/run_resume.hpp"

#include <map>

#include "pipeline/episode_store.hpp"
#include "pipeline/run_dir.hpp"
#include "policy/embedded_policy.hpp"
#include "runtime/training_pipeline.hpp"

namespace kgym {

resumed_run resume_run(const std::string& dir, const TrainConfig& config, const embedded_suite& suite) {
  resumed_run r;
  r.policy = run_dir::latest_checkpoint(dir).value_or(make_embedded_policy(suite.actions));
  run_dir::keep_metrics_before(dir, r.policy.version());
  r.plan.config = config;
  r.plan.tasks = suite.tasks;
  r.plan.first_iteration = r.policy.version();
  r.plan.store_path = run_dir::episodes_path(dir);
  r.scheduling.cache = config.eval_cache();
  auto stored = read_episodes(r.plan.store_path);
  r.store_cut = stored.truncated;
  std::map<std::string, const Task*> task_by_id;
  for (const auto& [id, task] : suite.tasks)
    task_by_id[id] = &task;
  const EvalOptions options = run_eval_options(config);
  for (auto& e : stored.episodes) {
    auto task = task_by_id.find(e.task_id());
    for (const auto& t : e.turns())  // a compile error never reached the scheduler
      if (task != task_by_id.end() && !t.source_hash().empty() && t.result().verdict() != COMPILE_ERROR)
        r.scheduling.preload.emplace_back(evaluation_key(*task->second, config.device(), options, t.source_hash()),
                                          t.result());
    if (e.iteration() >= r.plan.first_iteration)
      r.plan.finished[e.episode_id()] = std::move(e);
  }
  return r;
}

}  // namespace kgym
