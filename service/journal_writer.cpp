#include "service/journal_writer.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace kgym {

journal_writer::journal_writer(request_journal& journal) : journal_(journal) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "journal writer: eventfd");
  thread_ = std::thread([this] { run(); });
}

journal_writer::~journal_writer() {
  try {
    stop();
  } catch (...) {  // a failure was the serve loop's to report; a destructor cannot
  }
  ::close(wake_fd_);
}

void journal_writer::accepted(EvalRequest request, std::optional<ReplyRoute> route) {
  std::lock_guard lock(mutex_);
  ops_.push_back(accept_op{std::move(request), std::move(route)});
  work_.notify_one();
}

uint64_t journal_writer::answered(EvalResult answer, bool delivered) {
  std::lock_guard lock(mutex_);
  const uint64_t number = ++answers_posted_;
  ops_.push_back(answer_op{std::move(answer), delivered, number});
  work_.notify_one();
  return number;
}

void journal_writer::delivered(std::string request_id) {
  std::lock_guard lock(mutex_);
  ops_.push_back(delivered_op{std::move(request_id)});
  // Not worth a wake-up: a delivery mark waits for its grace anyway.
}

void journal_writer::compact(std::chrono::seconds keep) {
  std::lock_guard lock(mutex_);
  ops_.push_back(compact_op{keep});
  work_.notify_one();
}

void journal_writer::commit_synced() {
  std::unique_lock lock(mutex_);
  const uint64_t generation = ++sync_wanted_;
  work_.notify_one();
  synced_.wait(lock, [&] { return sync_done_ >= generation || failure_; });
  if (failure_)
    std::rethrow_exception(failure_);
}

uint64_t journal_writer::committed_through() const {
  std::lock_guard lock(mutex_);
  if (failure_)
    std::rethrow_exception(failure_);
  return committed_through_;
}

void journal_writer::clear_wake() {
  uint64_t count = 0;
  [[maybe_unused]] auto n = ::read(wake_fd_, &count, sizeof count);
}

void journal_writer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    work_.notify_one();
  }
  if (thread_.joinable())
    thread_.join();
  std::lock_guard lock(mutex_);
  if (failure_)
    std::rethrow_exception(failure_);
}

uint64_t journal_writer::apply(std::vector<op>& ops) {
  uint64_t last_answer = 0;
  for (auto& o : ops) {
    if (auto* a = std::get_if<accept_op>(&o)) {
      journal_.accepted(a->request, a->route ? &*a->route : nullptr);
    } else if (auto* r = std::get_if<answer_op>(&o)) {
      journal_.answered(r->answer, r->delivered);
      last_answer = r->number;
    } else if (auto* d = std::get_if<delivered_op>(&o)) {
      journal_.delivered(d->request_id);
    } else {
      journal_.compact(std::get<compact_op>(o).keep);
    }
  }
  return last_answer;
}

void journal_writer::run() {
  // The longest sleep between looks at the batch window (commit_when_due answers max when idle).
  constexpr std::chrono::milliseconds idle_wait{1000};
  std::chrono::milliseconds wait = idle_wait;
  try {
    for (;;) {
      std::vector<op> ops;
      uint64_t sync_generation = 0;
      bool stop = false;
      {
        std::unique_lock lock(mutex_);
        work_.wait_for(lock, wait, [&] { return !ops_.empty() || sync_wanted_ > sync_done_ || stopping_; });
        ops.swap(ops_);
        sync_generation = sync_wanted_ > sync_done_ ? sync_wanted_ : 0;
        stop = stopping_;
      }
      const uint64_t last_answer = apply(ops);
      if (sync_generation || stop)
        journal_.commit_synced();
      else if (last_answer)
        journal_.commit();  // answers go at once: a client waits for each
      {
        std::lock_guard lock(mutex_);
        if (last_answer)
          committed_through_ = last_answer;
        sync_done_ = std::max(sync_done_, sync_generation);
      }
      if (sync_generation)
        synced_.notify_all();
      if (last_answer) {
        const uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
      }
      if (stop) {
        std::lock_guard lock(mutex_);
        if (ops_.empty())
          return;
        continue;  // what was posted while this batch was written
      }
      wait = std::min(journal_.commit_when_due(), idle_wait);
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    failure_ = std::current_exception();
    synced_.notify_all();
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);  // the loop then sees the failure
  }
}

}  // namespace kgym
