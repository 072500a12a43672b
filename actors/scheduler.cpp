#include "actors/scheduler.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <unordered_map>

#include "pipeline/content_hash.hpp"

namespace kgym {

std::string evaluation_key(const Task& task, Device device, const EvalOptions& options,
                           const std::string& source_hash) {
  Task content = task;
  content.clear_path();  // informative only
  content.clear_description();
  return task.id() + "/" + source_hash + "/" + content_hash(deterministic_bytes(content)) +
         content_hash(Device_Name(device) + deterministic_bytes(options));
}

std::string evaluation_key(const ExecRequest& request) {
  return evaluation_key(request.task(), request.device(), request.options(),
                        content_hash(request.candidate().source()));
}

namespace {

using promise = caf::typed_response_promise<ExecResult>;

struct pending {
  ExecRequest request;
  std::string key;
};

struct executor_entry {
  gpu_executor_actor handle;
  std::string name;
  bool busy = false;
  bool leaving = false;
  uint64_t job_token = 0;  // which dispatch its work in flight belongs to
  pending job;
  std::vector<caf::typed_response_promise<caf::ok_atom>> drained;  // leave requests waiting
};

struct scheduler_state {
  std::map<caf::actor_addr, executor_entry> executors;
  std::deque<pending> queue;
  std::unordered_map<std::string, std::vector<std::pair<std::string, promise>>> waiting;  // key -> (id, promise)
  std::unordered_map<std::string, ExecResult> cache;
  bool use_cache = true;
  uint64_t next_token = 0;
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

void dispatch(self_ptr self);

// The executor is gone (down, unreachable): its work in flight goes back to the front.
void lose(self_ptr self, const caf::actor_addr& addr, const std::string& why) {
  auto it = self->state.executors.find(addr);
  if (it == self->state.executors.end())
    return;
  if (it->second.busy) {
    spdlog::warn("executor {} lost ({}): request {} placed again", it->second.name, why,
                 it->second.job.request.request_id());
    self->state.queue.push_front(std::move(it->second.job));
  } else {
    spdlog::warn("executor {} lost ({})", it->second.name, why);
  }
  for (auto& p : it->second.drained)
    p.deliver(caf::ok_atom::value);
  self->state.executors.erase(it);
  dispatch(self);
}

void finish(self_ptr self, const caf::actor_addr& addr, uint64_t token, ExecResult result) {
  auto it = self->state.executors.find(addr);
  if (it == self->state.executors.end() || !it->second.busy || it->second.job_token != token)
    return;  // already placed again after a loss
  auto& e = it->second;
  e.busy = false;
  std::string key = e.job.key;
  result.set_executor(e.name);
  if (self->state.use_cache && result.verdict() != INTERNAL_ERROR)
    self->state.cache[key] = result;
  deliver(self, key, result);
  if (e.leaving) {
    for (auto& p : e.drained)
      p.deliver(caf::ok_atom::value);
    self->state.executors.erase(it);
  }
  dispatch(self);
}

void dispatch(self_ptr self) {
  for (auto& [addr, e] : self->state.executors) {
    if (self->state.queue.empty())
      return;
    if (e.busy || e.leaving)
      continue;
    e.busy = true;
    e.job = std::move(self->state.queue.front());
    self->state.queue.pop_front();
    e.job_token = ++self->state.next_token;
    auto a = addr;
    auto token = e.job_token;
    self->request(e.handle, caf::infinite, e.job.request)
        .then([self, a, token](ExecResult& result) { finish(self, a, token, std::move(result)); },
              [self, a, token](caf::error& error) {
                auto it = self->state.executors.find(a);
                if (it == self->state.executors.end() || it->second.job_token != token)
                  return;
                if (error == caf::sec::request_receiver_down || error == caf::sec::remote_linking_failed) {
                  lose(self, a, self->system().render(error));
                  return;
                }
                ExecResult failed;
                failed.set_verdict(INTERNAL_ERROR);
                failed.set_task_id(it->second.job.request.task().id());
                failed.set_candidate_id(it->second.job.request.candidate().id());
                failed.set_message("the executor failed: " + self->system().render(error));
                finish(self, a, token, failed);
              });
  }
}

void join(self_ptr self, const std::string& name, const caf::strong_actor_ptr& ptr) {
  auto handle = caf::actor_cast<gpu_executor_actor>(ptr);
  if (!handle)
    return;
  auto& e = self->state.executors[handle.address()];
  e.handle = handle;
  e.name = name;
  self->monitor(handle);
  spdlog::info("executor {} joined ({} now)", name, self->state.executors.size());
  dispatch(self);
}

scheduler_actor::behavior_type scheduler_impl(self_ptr self, std::vector<gpu_executor_actor> executors,
                                              scheduler_options options) {
  self->state.use_cache = options.cache;
  for (const auto& [key, result] : options.preload)
    if (options.cache && result.verdict() != INTERNAL_ERROR)
      self->state.cache[key] = result;
  int n = 0;
  for (auto& e : executors)
    join(self, "local#" + std::to_string(n++), caf::actor_cast<caf::strong_actor_ptr>(e));
  self->set_down_handler([self](caf::down_msg& down) { lose(self, down.source, self->system().render(down.reason)); });
  return {
      [self](const ExecRequest& request) -> promise {
        auto p = self->make_response_promise<ExecResult>();
        std::string key = evaluation_key(request);
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
      [self](join_atom, const std::string& name, const caf::strong_actor_ptr& executor) { join(self, name, executor); },
      [self](leave_atom, const caf::strong_actor_ptr& executor) -> caf::typed_response_promise<caf::ok_atom> {
        auto p = self->make_response_promise<caf::ok_atom>();
        auto it = self->state.executors.find(caf::actor_cast<caf::actor_addr>(executor));
        if (it == self->state.executors.end() || !it->second.busy) {
          if (it != self->state.executors.end())
            self->state.executors.erase(it);
          p.deliver(caf::ok_atom::value);
          return p;
        }
        it->second.leaving = true;
        it->second.drained.push_back(p);
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
