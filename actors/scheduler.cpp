#include "actors/scheduler.hpp"
#include "messages/evidence.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "gpu/executor/eval_defaults.hpp"
#include "pipeline/bounded_cache.hpp"
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

std::chrono::milliseconds placement_deadline(const ExecRequest& request, const scheduler_options& options) {
  const EvalOptions o = with_defaults(request.options(), request.device());
  const auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); };
  return options.attempts * (options.start_timeout + ms(o.total_timeout_s())) +
         (uses_extensions(request.candidate().source()) ? ms(o.compile_timeout_s()) : std::chrono::milliseconds(0)) +
         options.deadline_slack;
}

namespace {

using promise = caf::typed_response_promise<ExecResult>;

struct pending {
  ExecRequest request;
  std::string key;
  std::chrono::steady_clock::time_point deadline{};  // once placed (placement_deadline)
  bool builds_extensions = false;  // uses_extensions(its source), read once
};

// The requests waiting for an executor, in arrival order (lost work goes back to the front).
// It counts those that build CUDA extensions, so looking for one costs nothing while there is
// none: a scan of the source of every queued request at every placement made 10,000 queued
// requests quadratic (control_plane_bench: minutes instead of seconds).
class request_queue {
 public:
  using iterator = std::deque<pending>::iterator;
  void push_back(pending p) {
    building_ += p.builds_extensions;
    items_.push_back(std::move(p));
  }
  void push_front(pending p) {
    building_ += p.builds_extensions;
    items_.push_front(std::move(p));
  }
  iterator erase(iterator it) {
    building_ -= it->builds_extensions;
    return items_.erase(it);
  }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  size_t size() const { return items_.size(); }
  // The first request that builds extensions; end() when none does.
  iterator first_building() {
    if (building_ == 0)
      return items_.end();
    return std::find_if(items_.begin(), items_.end(), [](const pending& p) { return p.builds_extensions; });
  }

 private:
  std::deque<pending> items_;
  size_t building_ = 0;
};

// Requests an executor may hold beyond the one it evaluates, while its extension compilers
// build their CUDA extensions on other cores (actors/extension_compiler.hpp): they stay fed.
constexpr size_t build_ahead = 2 * extension_compilers_per_executor;

struct executor_entry {
  gpu_executor_actor handle;
  std::string name;
  bool leaving = false;
  std::map<uint64_t, pending> in_flight;  // by dispatch token, in dispatch order
  std::vector<caf::typed_response_promise<caf::ok_atom>> drained;  // leave requests waiting
};

struct scheduler_state {
  std::map<caf::actor_addr, executor_entry> executors;
  request_queue queue;
  std::unordered_map<std::string, std::vector<std::pair<std::string, promise>>> waiting;  // key -> (id, promise)
  bounded_cache<ExecResult> cache;  // evaluation_key -> result, at most scheduler_options.cache_limit
  bool use_cache = true;
  scheduler_options bounds;  // for placement_deadline
  uint64_t next_token = 0;
  // When the deadline timer fires next. One timer for all placed requests: CAF 0.17 keeps a
  // request's timeout in its clock until it fires, even once answered, so a timeout per request
  // grew the server by every request of the last deadline (minutes of them).
  std::optional<std::chrono::steady_clock::time_point> next_check;
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

// Makes the deadline timer fire by `t`.
void watch_deadline(self_ptr self, std::chrono::steady_clock::time_point t) {
  auto& next = self->state.next_check;
  if (next && *next <= t)
    return;
  next = t;
  const auto wait = std::max(t - self->clock().now(), std::chrono::steady_clock::duration::zero());
  self->delayed_send(self, std::chrono::duration_cast<std::chrono::microseconds>(wait), deadline_atom::value);
}

SchedulerStatus status_of(const scheduler_state& state) {
  SchedulerStatus status;
  status.set_queued(static_cast<int32_t>(state.queue.size()));
  for (const auto& [addr, e] : state.executors) {
    auto* executor = status.add_executors();
    executor->set_name(e.name);
    executor->set_in_flight(static_cast<int32_t>(e.in_flight.size()));
    executor->set_leaving(e.leaving);
    status.set_in_flight(status.in_flight() + executor->in_flight());
  }
  status.set_cached(static_cast<int32_t>(state.cache.size()));
  return status;
}

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
  auto& in_flight = it->second.in_flight;
  spdlog::warn("executor {} lost ({}){}", it->second.name, why,
               in_flight.empty() ? "" : ": " + std::to_string(in_flight.size()) + " request(s) placed again");
  for (auto job = in_flight.rbegin(); job != in_flight.rend(); ++job)
    self->state.queue.push_front(std::move(job->second));
  for (auto& p : it->second.drained)
    p.deliver(caf::ok_atom::value);
  self->state.executors.erase(it);
  dispatch(self);
}

void finish(self_ptr self, const caf::actor_addr& addr, uint64_t token, ExecResult result) {
  auto it = self->state.executors.find(addr);
  if (it == self->state.executors.end() || !it->second.in_flight.count(token))
    return;  // already placed again after a loss
  auto& e = it->second;
  std::string key = e.in_flight[token].key;
  e.in_flight.erase(token);
  result.set_executor(e.name);
  if (self->state.use_cache && result.verdict() != INTERNAL_ERROR && result.verdict() != CANCELLED)
    self->state.cache.put(key, result);
  deliver(self, key, result);
  if (e.leaving && e.in_flight.empty()) {
    for (auto& p : e.drained)
      p.deliver(caf::ok_atom::value);
    self->state.executors.erase(it);
  }
  dispatch(self);
}

// The next queued request for an executor: any, when it has nothing in flight; else (and
// only `ahead`) one that builds CUDA extensions first, while it has room to build ahead.
// queue.end(): none.
request_queue::iterator next_for(self_ptr self, const executor_entry& e, bool ahead) {
  auto& queue = self->state.queue;
  if (e.leaving || e.in_flight.size() > build_ahead)
    return queue.end();
  if (e.in_flight.empty())
    return queue.begin();
  if (!ahead)
    return queue.end();
  return queue.first_building();
}

void place(self_ptr self, bool ahead) {
  for (auto& [addr, e] : self->state.executors) {
    for (auto next = next_for(self, e, ahead); next != self->state.queue.end(); next = next_for(self, e, ahead)) {
      auto token = ++self->state.next_token;
      // Placed behind what the executor already holds (a build ahead): it waits for those too.
      auto deadline = std::chrono::milliseconds(0);
      for (const auto& [held_token, held] : e.in_flight)
        deadline += placement_deadline(held.request, self->state.bounds);
      auto& job = e.in_flight[token] = std::move(*next);
      deadline += placement_deadline(job.request, self->state.bounds);
      job.deadline = self->clock().now() + deadline;
      self->state.queue.erase(next);
      watch_deadline(self, job.deadline);
      auto a = addr;
      self->request(e.handle, caf::infinite, job.request)
          .then([self, a, token](ExecResult& result) { finish(self, a, token, std::move(result)); },
                [self, a, token](caf::error& error) {
                  auto it = self->state.executors.find(a);
                  if (it == self->state.executors.end() || !it->second.in_flight.count(token))
                    return;
                  if (error == caf::sec::request_receiver_down || error == caf::sec::remote_linking_failed) {
                    lose(self, a, self->system().render(error));
                    return;
                  }
                  const auto& request = it->second.in_flight[token].request;
                  ExecResult failed = result_for(request);  // each waiter's own id on delivery
                  failed.set_verdict(INTERNAL_ERROR);
                  failed.set_message("the executor failed: " + self->system().render(error));
                  finish(self, a, token, failed);
                });
    }
  }
}

// Executors holding a request past its deadline are lost (their work placed again); the timer
// is then set for the earliest deadline left.
void check_deadlines(self_ptr self) {
  self->state.next_check.reset();
  const auto now = self->clock().now();
  std::vector<std::pair<caf::actor_addr, std::string>> late;
  std::optional<std::chrono::steady_clock::time_point> earliest;
  for (const auto& [addr, e] : self->state.executors)
    for (const auto& [token, job] : e.in_flight) {
      if (job.deadline <= now) {
        late.emplace_back(addr, "request " + job.request.request_id() + " unanswered past its deadline");
        break;
      }
      earliest = earliest ? std::min(*earliest, job.deadline) : job.deadline;
    }
  for (const auto& [addr, why] : late)
    lose(self, addr, why);  // places their work again, which sets the timer for it
  if (earliest)
    watch_deadline(self, *earliest);
}

// The request `id` withdrawn by its client: its waiter answered CANCELLED now; when nobody
// else waits for the same evaluation, the queued job is dropped, or the executor holding it
// told to stop it (its answer then goes to nobody: the job's key is made one nobody waits on).
bool cancel(self_ptr self, const std::string& id) {
  auto& waiting = self->state.waiting;
  for (auto it = waiting.begin(); it != waiting.end(); ++it) {
    auto& waiters = it->second;
    auto found = std::find_if(waiters.begin(), waiters.end(), [&](const auto& w) { return w.first == id; });
    if (found == waiters.end())
      continue;
    ExecResult cancelled;
    cancelled.set_request_id(id);
    cancelled.set_verdict(CANCELLED);
    cancelled.set_message("withdrawn by its client");
    found->second.deliver(cancelled);
    waiters.erase(found);
    if (!waiters.empty())
      return true;  // an identical request still waits for the evaluation
    const std::string key = it->first;
    waiting.erase(it);
    auto& queue = self->state.queue;
    auto queued = std::find_if(queue.begin(), queue.end(), [&](const pending& p) { return p.key == key; });
    if (queued != queue.end()) {
      spdlog::info("request {} withdrawn while queued", id);
      queue.erase(queued);
      return true;
    }
    for (auto& [addr, e] : self->state.executors)
      for (auto& [token, job] : e.in_flight)
        if (job.key == key) {
          spdlog::info("request {} withdrawn while on {}: stopping it", id, e.name);
          job.key = "withdrawn#" + job.request.request_id();
          self->send(e.handle, cancel_atom::value, job.request.request_id());
          return true;
        }
    return true;
  }
  return false;
}

// Idle executors first, then builds ahead on busy ones.
void dispatch(self_ptr self) {
  place(self, false);
  place(self, true);
}

void join(self_ptr self, const std::string& name, const caf::strong_actor_ptr& ptr) {
  auto handle = caf::actor_cast<gpu_executor_actor>(ptr);
  if (!handle)
    return;
  // A name is unique: a second join under it replaces the first (a worker that rejoins
  // before its old connection was noticed gone), whose work in flight is placed again.
  auto same_name = std::find_if(self->state.executors.begin(), self->state.executors.end(), [&](const auto& other) {
    return other.second.name == name && other.first != handle.address();
  });
  if (same_name != self->state.executors.end()) {
    const caf::actor_addr replaced = same_name->first;
    lose(self, replaced, "replaced: another executor joined under its name");
  }
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
  self->state.cache.set_capacity(options.cache_limit);
  for (const auto& [key, result] : options.preload)
    if (options.cache && result.verdict() != INTERNAL_ERROR)
      self->state.cache.put(key, result);
  options.preload.clear();  // in the cache now
  self->state.bounds = std::move(options);
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
        if (const ExecResult* hit = self->state.cache.find(key)) {
          ExecResult cached = *hit;
          cached.set_request_id(request.request_id());
          cached.set_from_cache(true);
          p.deliver(cached);
          return p;
        }
        auto& waiters = self->state.waiting[key];
        waiters.emplace_back(request.request_id(), p);
        if (waiters.size() == 1) {
          self->state.queue.push_back({request, key, {}, uses_extensions(request.candidate().source())});
          dispatch(self);
        }
        return p;
      },
      [self](join_atom, const std::string& name, const caf::strong_actor_ptr& executor) { join(self, name, executor); },
      [self](leave_atom, const caf::strong_actor_ptr& executor) -> caf::typed_response_promise<caf::ok_atom> {
        auto p = self->make_response_promise<caf::ok_atom>();
        auto it = self->state.executors.find(caf::actor_cast<caf::actor_addr>(executor));
        if (it == self->state.executors.end() || it->second.in_flight.empty()) {
          if (it != self->state.executors.end())
            self->state.executors.erase(it);
          p.deliver(caf::ok_atom::value);
          return p;
        }
        it->second.leaving = true;
        it->second.drained.push_back(p);
        return p;
      },
      [self](status_atom) { return status_of(self->state); },
      [self](deadline_atom) { check_deadlines(self); },
      [self](cancel_atom, const std::string& request_id) { return cancel(self, request_id); },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& system, std::vector<gpu_executor_actor> executors,
                                scheduler_options options) {
  return system.spawn(scheduler_impl, std::move(executors), std::move(options));
}

}  // namespace kgym
