#include "service/journal_writer.hpp"

#include <pthread.h>

#include <algorithm>
#include <stdexcept>

namespace kgym {

journal_writer::journal_writer(request_journal& journal, std::function<void()> on_committed)
    : journal_(journal), on_committed_(std::move(on_committed)) {
  thread_ = std::thread([this] { run(); });
  ::pthread_setname_np(thread_.native_handle(), "kgym-journal");  // for top -H and /proc
}

journal_writer::~journal_writer() {
  try {
    stop();
  } catch (...) {  // a failure was the API service's to report; a destructor cannot
  }
}

void journal_writer::accepted(EvalRequest request, std::optional<ReplyRoute> route, bool by_task_id) {
  gathered_.push_back(accept_op{std::move(request), std::move(route), by_task_id});
  wake_on_flush_ = true;
}

void journal_writer::answered(EvalResult answer, bool delivered) {
  gathered_.push_back(answer_op{std::move(answer), delivered});
  wake_on_flush_ = true;
}

void journal_writer::delivered(std::string request_id) {
  gathered_.push_back(delivered_op{std::move(request_id)});  // waits for its grace anyway: no wake-up
}

void journal_writer::compact(std::chrono::seconds keep) {
  gathered_.push_back(compact_op{keep});
  wake_on_flush_ = true;
}

void journal_writer::flush() {
  if (gathered_.empty())
    return;
  std::lock_guard lock(mutex_);
  for (auto& o : gathered_)
    ops_.push_back(std::move(o));
  gathered_.clear();
  if (wake_on_flush_ && sleeping_) {  // else it is awake, and looks at the queue again before it sleeps
    sleeping_ = false;
    work_.notify_one();
  }
  wake_on_flush_ = false;
}

bool journal_writer::idle() const {
  std::lock_guard lock(mutex_);
  return sleeping_ && ops_.empty();
}

std::optional<std::vector<EvalResult>> journal_writer::commit_here() {
  // Holding the mutex, the writer cannot leave its wait: the journal is this thread's meanwhile.
  std::lock_guard lock(mutex_);
  if (!sleeping_ || !ops_.empty() || stopping_ || failure_)
    return std::nullopt;
  std::vector<op> ops = std::exchange(gathered_, {});
  wake_on_flush_ = false;
  try {
    std::vector<EvalResult> answers = apply(ops);
    journal_.commit();
    return answers;
  } catch (...) {
    failure_ = std::current_exception();  // take_committed() and commit_synced() rethrow it too
    throw;
  }
}

std::vector<EvalResult> journal_writer::take_committed() {
  std::lock_guard lock(mutex_);
  if (failure_)
    std::rethrow_exception(failure_);
  return std::exchange(committed_, {});
}

void journal_writer::commit_synced() {
  flush();
  std::unique_lock lock(mutex_);
  const uint64_t generation = ++sync_wanted_;
  work_.notify_one();
  synced_.wait(lock, [&] { return sync_done_ >= generation || failure_; });
  if (failure_)
    std::rethrow_exception(failure_);
}

void journal_writer::stop() {
  flush();
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

std::vector<EvalResult> journal_writer::apply(std::vector<op>& ops) {
  std::vector<EvalResult> answers;
  for (auto& o : ops) {
    if (auto* a = std::get_if<accept_op>(&o)) {
      if (a->by_task_id)
        a->request.clear_task();
      a->request.clear_secret();  // (the journal would copy the request to leave it out)
      journal_.accepted(a->request, a->route ? &*a->route : nullptr);
    } else if (auto* r = std::get_if<answer_op>(&o)) {
      journal_.answered(r->answer, r->delivered);
      answers.push_back(std::move(r->answer));
    } else if (auto* d = std::get_if<delivered_op>(&o)) {
      journal_.delivered(d->request_id);
    } else {
      journal_.compact(std::get<compact_op>(o).keep);
    }
  }
  return answers;
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
        const auto until = std::chrono::steady_clock::now() + wait;
        while (ops_.empty() && sync_wanted_ <= sync_done_ && !stopping_) {
          sleeping_ = true;
          if (work_.wait_until(lock, until) == std::cv_status::timeout)
            break;
        }
        sleeping_ = false;
        ops.swap(ops_);
        sync_generation = sync_wanted_ > sync_done_ ? sync_wanted_ : 0;
        stop = stopping_;
      }
      std::vector<EvalResult> answers = apply(ops);
      const bool answered = !answers.empty();
      if (sync_generation || stop)
        journal_.commit_synced();
      else if (answered)
        journal_.commit();  // answers go at once: a client waits for each
      {
        std::lock_guard lock(mutex_);
        for (auto& a : answers)
          committed_.push_back(std::move(a));
        sync_done_ = std::max(sync_done_, sync_generation);
      }
      if (sync_generation)
        synced_.notify_all();
      if (answered && on_committed_)
        on_committed_();
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
    if (on_committed_)
      on_committed_();  // take_committed() then rethrows it
  }
}

}  // namespace kgym
