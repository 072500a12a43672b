#include "service/api_outbox.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace kgym {

api_outbox::api_outbox() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (wake_fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "api outbox: eventfd");
}

api_outbox::~api_outbox() { ::close(wake_fd_); }

void api_outbox::push(api_delivery delivery) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = items_.empty();
    items_.push_back(std::move(delivery));
  }
  if (first) {  // one wake-up per batch the loop takes, not one a reply
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }
}

std::vector<api_delivery> api_outbox::take() {
  uint64_t count;
  [[maybe_unused]] auto n = ::read(wake_fd_, &count, sizeof count);
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(items_, {});
}

void api_outbox::set_failed(std::string why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = std::move(why);
  }
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

std::string api_outbox::failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void api_outbox::set_drained() {
  drained_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

}  // namespace kgym
