#include "runtime/training_pipeline.hpp"

#include <caf/all.hpp>

#include "actors/compiler.hpp"
#include "actors/inference.hpp"
#include "actors/monitor.hpp"
#include "actors/reward.hpp"
#include "gpu/executor/gpu_assignment.hpp"
#include "pipeline/progress_log.hpp"
#include "pipeline/train_config.hpp"
#include "policy/openai_wire.hpp"

namespace kgym {

EvalOptions run_eval_options(const TrainConfig& config) {
  EvalOptions options = config.eval();
  options.set_no_hacking_check(!config.hacking_check());
  return options;
}

training_pipeline start_pipeline(caf::actor_system& system, const TrainConfig& config,
                                 std::vector<gpu_executor_actor> executors, const std::string& python, Device device,
                                 const std::string& dir, const EmbeddedPolicy& policy, const embedded_suite& suite,
                                 const scheduler_options& scheduling, bool evaluate_only,
                                 const kept_services& kept) {
  training_pipeline p;
  p.executors = std::move(executors);
  auto& services = p.services;

  bool llm = config.policy() == OPENAI;
  services.inference = llm ? spawn_openai_inference(system, config.openai(), policy.version())
                           : spawn_embedded_inference(system, policy, suite.programs);
  p.own_compiler = !kept.compiler;
  services.compiler = kept.compiler ? kept.compiler : spawn_compiler(system, python);
  services.scheduler = spawn_scheduler(system, p.executors, scheduling);
  services.reward = spawn_reward(system, config.reward());
  services.monitor = spawn_monitor(system, dir);
  services.device = device;
  services.options = run_eval_options(config);
  services.context_turns = config.context_turns();
  if (llm)
    services.context_token_budget = config.openai().prompt_token_budget();
  learner_options learning;
  learning.settings = learner_settings_from(config);
  learning.lazy_coverage = config.prs_threshold();
  learning.inference = services.inference;
  learning.monitor = services.monitor;
  learning.system_prompt = openai_defaults(config.openai()).system_prompt();  // what the server was sent
  // An evaluation trains nothing and keeps no metrics or checkpoints (its report is the record).
  if (!evaluate_only) {
    learning.run_dir = dir;
    learning.trainer = config.trainer();
    if (llm && config.trainer().endpoint().empty())
      progress_log()->warn("policy openai without --trainer: episodes are evaluated, nothing is trained");
  }
  p.learner = llm || evaluate_only ? spawn_trainer_learner(system, policy.version(), learning)
                                   : spawn_learner(system, policy, learning);
  return p;
}

training_pipeline start_pipeline(caf::actor_system& system, const TrainConfig& config, const executor_options& exec,
                                 const std::string& dir, const EmbeddedPolicy& policy, const embedded_suite& suite,
                                 const scheduler_options& scheduling, bool evaluate_only) {
  std::vector<gpu_executor_actor> executors;
  for (const auto& on_gpu :
       executors_on_gpus(exec, executor_gpus(exec.launch.device, config.executors(), {}, visible_gpus())))
    executors.push_back(spawn_gpu_executor(system, on_gpu));
  return start_pipeline(system, config, std::move(executors), exec.launch.python, exec.launch.device, dir, policy,
                        suite, scheduling, evaluate_only);
}

namespace {
void stop_pipeline(caf::scoped_actor& self, const training_pipeline& p) {
  // The scheduler first: stopped after its executors, it would log each as lost.
  self->send_exit(p.services.scheduler, caf::exit_reason::user_shutdown);
  for (const auto& e : p.executors)
    self->send_exit(e, caf::exit_reason::user_shutdown);
  if (p.own_compiler)
    self->send_exit(p.services.compiler, caf::exit_reason::user_shutdown);
  self->send_exit(p.learner, caf::exit_reason::user_shutdown);
  self->send_exit(p.services.monitor, caf::exit_reason::user_shutdown);
  self->send_exit(p.services.inference, caf::exit_reason::user_shutdown);
  self->send_exit(p.services.reward, caf::exit_reason::user_shutdown);
}
}  // namespace

caf::expected<IterationMetrics> run_to_end(caf::actor_system& system, const run_plan& plan,
                                           const training_pipeline& p) {
  auto controller = spawn_run_controller(system, plan, p.services, p.learner);
  caf::expected<IterationMetrics> outcome{caf::sec::runtime_error};
  caf::scoped_actor self{system};
  self->request(controller, caf::infinite, run_atom::value)
      .receive([&](const IterationMetrics& last) { outcome = last; },
               [&](const caf::error& error) { outcome = error; });
  stop_pipeline(self, p);
  return outcome;
}

}  // namespace kgym
