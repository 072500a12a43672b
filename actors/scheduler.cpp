#include "actors/scheduler.hpp"

#include <caf/all.hpp>

#include <deque>
#include <unordered_map>

#include "pipeline/content_hash.hpp"

namespace kgym {

std::string evaluation_key(const std::string& task_id, const std::string& source) {
  return task_id + "/" + content_hash(source);
}

namespace {

using promise = caf::typed_response_promise<ExecResult>;

struct pending {
  ExecRequest request;
  std::string key;
};

struct scheduler_state {
  std::vector<gpu_executor_actor> idle;
  std::deque<pending> queue;
  std::unordered_map<std::string, std::vector<std::pair<std::string, promise>>> waiting;  // key -> (request id, promise)
  std::unordered_map<std::string, ExecResult> cache;
  bool use_cache = true;
  static inline const char* name = "scheduler";
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

void deliver(self_ptr self, const std::string& key, const ExecResult& result) {
  auto waiters = std::move(self->state.waiting[key]);
  self->state.waiting.erase(key);
  for (auto& [request_id, p] : waiters) {
    ExecResult copy = result;
    copy.set_request_id(request_id);
    p.deliver(copy);
  }
}

void dispatch(self_ptr self) {
  while (!self->state.idle.empty() && !self->state.queue.empty()) {
    auto executor = self->state.idle.back();
    self->state.idle.pop_back();
    pending job = std::move(self->state.queue.front());
    self->state.queue.pop_front();
    auto done = [self, executor, key = job.key](const ExecResult& result) {
      if (self->state.use_cache && result.verdict() != INTERNAL_ERROR)
        self->state.cache[key] = result;
      deliver(self, key, result);
      self->state.idle.push_back(executor);
      dispatch(self);
    };
    auto request = job.request;
    self->request(executor, caf::infinite, job.request)
        .then(done, [done, request, self](caf::error& error) {
          ExecResult failed;
          failed.set_verdict(INTERNAL_ERROR);
          failed.set_task_id(request.task().id());
          failed.set_candidate_id(request.candidate().id());
          failed.set_message("the executor failed: " + self->system().render(error));
          done(failed);
        });
  }
}

scheduler_actor::behavior_type scheduler_impl(self_ptr self, std::vector<gpu_executor_actor> executors,
                                              scheduler_options options) {
  self->state.idle = std::move(executors);
  self->state.use_cache = options.cache;
  for (const auto& [key, result] : options.preload)
    if (options.cache && result.verdict() != INTERNAL_ERROR)
      self->state.cache[key] = result;
  return {
      [self](const ExecRequest& request) -> promise {
        auto p = self->make_response_promise<ExecResult>();
        std::string key = evaluation_key(request.task().id(), request.candidate().source());
        if (!self->state.use_cache)
          key += "#" + request.request_id();  // every request runs on its own
        auto hit = self->state.cache.find(key);
        if (hit != self->state.cache.end()) {
          ExecResult cached = hit->second;
          cached.set_request_id(request.request_id());
          cached.set_from_cache(true);
          p.deliver(cached);
          return p;
        }
        auto& waiters = self->state.waiting[key];
        waiters.emplace_back(request.request_id(), p);
        if (waiters.size() == 1) {
          self->state.queue.push_back({request, key});
          dispatch(self);
        }
        return p;
      },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& system, std::vector<gpu_executor_actor> executors,
                                scheduler_options options) {
  return system.spawn(scheduler_impl, std::move(executors), std::move(options));
}

}  // namespace kgym
