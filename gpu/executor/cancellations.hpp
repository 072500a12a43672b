// Requests whose client withdrew them (DELETE /v1/evaluations/<id>), shared between the
// executor actor, which hears of it, and its evaluation worker, which is blocked in the
// evaluation and looks at each watchdog tick: a cancelled one is stopped (its processes
// killed) and answered CANCELLED; one not started yet is answered so without running.
#pragma once

#include <mutex>
#include <set>
#include <string>

namespace kgym {

class cancellations {
 public:
  void cancel(const std::string& request_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    ids_.insert(request_id);
  }
  bool cancelled(const std::string& request_id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ids_.count(request_id) > 0;
  }
  // Once its answer is out: the id is not kept.
  void forget(const std::string& request_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    ids_.erase(request_id);
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::string> ids_;
};

}  // namespace kgym
