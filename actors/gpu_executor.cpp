#include "actors/gpu_executor.hpp"

#include "actors/profiler.hpp"
#include "messages/evidence.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "pipeline/paths.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <tuple>
#include <vector>

namespace kgym {

namespace {

struct evaluation_worker_state {
  std::unique_ptr<sandbox_evaluator> evaluator;
  static inline const char* name = "evaluation_worker";
};

evaluation_worker_actor::behavior_type evaluation_worker(
    evaluation_worker_actor::stateful_pointer<evaluation_worker_state> self, executor_options options) {
  self->state.evaluator = std::make_unique<sandbox_evaluator>(std::move(options));
  // The sandbox starts with the executor (this actor's own thread; requests wait in its
  // mailbox meanwhile): the first request finds its processes prepared, as every later one.
  if (auto error = self->state.evaluator->start(); !error.empty())
    spdlog::warn("the sandbox did not start ({}); the first request starts it again", error);
  return {
      [self](const ExecRequest& request, const SandboxEvent::Built& built) -> std::tuple<ExecResult, CandidateTrace> {
        auto [result, trace] = self->state.evaluator->evaluate_on_device(request, &built);
        return {std::move(result), std::move(trace)};
      },
  };
}

struct gpu_executor_state {
  Device device = CPU;
  std::shared_ptr<cancellations> withdrawn;  // the evaluation worker's too
  evaluation_worker_actor evaluation;
  profiler_actor profiler;  // rules on each evaluation's trace
  std::vector<extension_compiler_actor> compilers;  // this node's compiler stage for CUDA extensions
  std::vector<int> building;  // requests in each compiler
  static inline const char* name = "gpu_executor";
};

ExecResult worker_failed(const ExecRequest& request, const std::string& what) {
  ExecResult r = result_for(request);
  r.set_verdict(INTERNAL_ERROR);
  r.set_message(what);
  return r;
}

gpu_executor_actor::behavior_type gpu_executor_impl(
    gpu_executor_actor::stateful_pointer<gpu_executor_state> self, executor_options options) {
  self->state.device = options.launch.device;
  if (options.extension_cache.empty())
    options.extension_cache = extension_cache_dir();  // one cache for the compilers and the evaluator
  if (options.launch.device == CUDA) {
    for (int i = 0; i < extension_compilers_per_executor; ++i) {
      self->state.compilers.push_back(
          spawn_extension_compiler(self->system(), options.launch, options.extension_cache, options.work_root));
      self->state.building.push_back(0);
    }
  }
  self->state.withdrawn = options.withdrawn;
  self->state.evaluation = self->system().spawn<caf::detached>(evaluation_worker, std::move(options));
  self->state.profiler = spawn_profiler(self->system());
  return {
      [self](cancel_atom, const std::string& request_id) { self->state.withdrawn->cancel(request_id); },
      [self](ExecRequest request) -> caf::typed_response_promise<ExecResult> {
        // The executor decides where a request runs: a request placed from elsewhere (a
        // scheduler serving several kinds of node) runs on this executor's device, and task
        // sizes meant for the CPU do not apply on a GPU.
        request.set_device(self->state.device);
        if (self->state.device == CUDA)
          request.mutable_options()->set_apply_cpu_sizes(false);
        auto promise = self->make_response_promise<ExecResult>();
        auto evaluate = [self, promise](const ExecRequest& request, const SandboxEvent::Built& built) mutable {
          auto failed = [self, promise, request](caf::error& error) mutable {
            promise.deliver(worker_failed(request, "the evaluation failed: " + self->system().render(error)));
          };
          self->request(self->state.evaluation, caf::infinite, request, built)
              .then(
                  [self, promise, failed](ExecResult& result, CandidateTrace& trace) mutable {
                    self->request(self->state.profiler, caf::infinite, std::move(result), std::move(trace))
                        .then([promise](ExecResult& ruled) mutable { promise.deliver(std::move(ruled)); }, failed);
                  },
                  failed);
        };
        if (self->state.compilers.empty() || !uses_extensions(request.candidate().source())) {
          evaluate(request, SandboxEvent::Built{});
          return promise;
        }
        auto& building = self->state.building;
        const size_t worker = std::min_element(building.begin(), building.end()) - building.begin();
        ++building[worker];
        self->request(self->state.compilers[worker], caf::infinite, request)
            .then(
                [self, worker, request, promise, evaluate](SandboxEvent::Built& built) mutable {
                  --self->state.building[worker];
                  ExecResult failed = build_failure(request, built);
                  if (failed.verdict() != VERDICT_UNSPECIFIED)
                    promise.deliver(std::move(failed));
                  else
                    evaluate(request, built);
                },
                [self, worker, request, promise](caf::error& error) mutable {
                  --self->state.building[worker];
                  promise.deliver(worker_failed(request, "the extension build failed: " + self->system().render(error)));
                });
        return promise;
      },
  };
}

gpu_executor_actor::behavior_type null_executor(gpu_executor_actor::pointer) {
  return {[](cancel_atom, const std::string&) {},  // it answers at once: nothing to stop
          [](const ExecRequest& request) -> ExecResult {
    ExecResult r = result_for(request);
    (*r.mutable_harness_seconds())["executor_start_unix"] =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    r.set_verdict(OK);
    r.set_correct(true);
    r.set_speedup(2.0);
    r.mutable_profile()->set_coverage(1.0);
    return r;
  }};
}

}  // namespace

gpu_executor_actor spawn_null_executor(caf::actor_system& system) { return system.spawn(null_executor); }

gpu_executor_actor spawn_gpu_executor(caf::actor_system& system, executor_options options) {
  return system.spawn(gpu_executor_impl, std::move(options));
}

}  // namespace kgym
