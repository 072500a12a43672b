// api_outbox: what the API service actor has for clients, waiting for the serve loop (the one
// thread that owns the sockets) to send it: ZeroMQ replies and HTTP answers, in order.
// wake_fd() is readable while something waits, so the loop polls it beside its sockets.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

struct api_delivery {
  // An HTTP answer to call `call` (http set), else a ZeroMQ reply to `route`.
  bool http = false;
  uint64_t call = 0;
  int status = 0;
  std::string body;
  std::string content_type = "application/json";
  ReplyRoute route;
  EvalResult answer;
  bool redeliver = false;      // an answer: one its client cannot take now is tried again later
  int64_t retry_until_ns = 0;  // a redelivery: its deadline (steady clock); 0: a first try
  bool journaled = false;      // once sent, the journal marks it delivered
};

class api_outbox {
 public:
  api_outbox();
  ~api_outbox();
  api_outbox(const api_outbox&) = delete;
  api_outbox& operator=(const api_outbox&) = delete;

  void push(api_delivery delivery);
  // Everything waiting, in the order pushed; the wake-up is cleared.
  std::vector<api_delivery> take();
  int wake_fd() const { return wake_fd_; }
  // Draining, nothing is in flight any more: the loop may stop (set by the actor, then woken).
  void set_drained();
  bool drained() const { return drained_; }
  // The actor ended by an error (the journal failed): why, for the loop to stop with.
  void set_failed(std::string why);
  std::string failure();

 private:
  std::mutex mutex_;
  std::vector<api_delivery> items_;
  int wake_fd_ = -1;
  std::atomic<bool> drained_{false};
  std::string failure_;  // under mutex_
};

}  // namespace kgym
