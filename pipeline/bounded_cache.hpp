// bounded_cache: a map that keeps at most `capacity` entries, forgetting the oldest inserted
// first, so a long-running service's caches (the scheduler's evaluations, the compiler's checks)
// hold a bounded amount of memory. An entry inserted again keeps its place in line.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>

namespace kgym {

template <class Value>
class bounded_cache {
 public:
  explicit bounded_cache(size_t capacity = 10000) : capacity_(capacity) {}

  void put(const std::string& key, Value value) {
    auto [it, added] = entries_.insert_or_assign(key, std::move(value));
    if (!added)
      return;
    order_.push_back(key);
    while (order_.size() > capacity_) {
      entries_.erase(order_.front());
      order_.pop_front();
    }
  }
  const Value* find(const std::string& key) const {
    auto found = entries_.find(key);
    return found == entries_.end() ? nullptr : &found->second;
  }
  size_t size() const { return entries_.size(); }
  void set_capacity(size_t capacity) { capacity_ = capacity; }

 private:
  size_t capacity_;
  std::unordered_map<std::string, Value> entries_;
  std::deque<std::string> order_;  // oldest first
};

}  // namespace kgym
