#include "service/http_front.hpp"

#include "messages/ascii_case.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace kgym {

namespace {

// Longer than any long poll (600 s at most): a call the serving thread never answered (it
// stopped) ends with 503 instead of holding its thread for ever.
constexpr auto longest_call = std::chrono::seconds(660);

}  // namespace

http_front::http_front(const std::string& host, int port, size_t max_body_bytes, size_t max_connections)
    : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  server_.new_task_queue = [max_connections] { return new httplib::ThreadPool(max_connections); };
  server_.set_payload_max_length(max_body_bytes);
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    http_request call;
    call.method = req.method;
    call.path = req.path;
    for (const auto& [name, value] : req.params) call.query.emplace(name, value);
    for (const auto& [name, value] : req.headers) call.headers.emplace(ascii_lower(name), value);
    call.body = req.body;
    call.peer = req.remote_addr + ":" + std::to_string(req.remote_port);
    std::future<http_answer> answered;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) {
        res.status = 503;
        res.set_content(R"({"error":"the server is stopping"})", "application/json");
        return;
      }
      const uint64_t id = ++next_id_;
      answered = open_[id].get_future();
      arrived_.emplace_back(id, std::move(call));
    }
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    http_answer a;
    if (answered.wait_for(longest_call) == std::future_status::ready)
      a = answered.get();
    else
      a = {503, R"({"error":"the server did not answer in time"})"};
    res.status = a.status;
    res.set_content(a.body, a.content_type.c_str());
  };
  server_.Get(".*", handler);
  server_.Post(".*", handler);
  server_.Put(".*", handler);
  server_.Delete(".*", handler);
  server_.Patch(".*", handler);
  port_ = port == 0 ? server_.bind_to_any_port(host) : (server_.bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) {
    ::close(wake_fd_);
    throw std::runtime_error("cannot serve HTTP on " + host + ":" + std::to_string(port) +
                             " (is the port taken, or the address not this machine's?)");
  }
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

http_front::~http_front() {
  server_.stop();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (auto& [id, promise] : open_)  // calls still open hear the server is going
      promise.set_value({503, R"({"error":"the server is stopping"})"});
    open_.clear();
  }
  if (thread_.joinable())
    thread_.join();
  ::close(wake_fd_);
}

std::vector<std::pair<uint64_t, http_request>> http_front::take() {
  uint64_t count;
  (void)!::read(wake_fd_, &count, sizeof count);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<uint64_t, http_request>> calls(std::make_move_iterator(arrived_.begin()),
                                                       std::make_move_iterator(arrived_.end()));
  arrived_.clear();
  return calls;
}

void http_front::answer(uint64_t id, http_answer a) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto open = open_.find(id);
  if (open == open_.end())
    return;
  open->second.set_value(std::move(a));
  open_.erase(open);
}

}  // namespace kgym
