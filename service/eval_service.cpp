#include "service/eval_service.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <zmq_addon.hpp>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "service/api_service.hpp"
#include "service/eval_api.hpp"

namespace kgym {

namespace {

// Where the answer to the request in `frames` goes: its ROUTER routing frames (all but the last).
ReplyRoute route_of(const std::vector<zmq::message_t>& frames, bool json) {
  ReplyRoute route;
  for (size_t i = 0; i + 1 < frames.size(); ++i)
    route.add_frames(frames[i].to_string());
  route.set_json(json);
  return route;
}

// Where a ZeroMQ request came from, for the log: the peer's address where the transport
// has one, and the client's routing id (printable, or in hex).
std::string zmq_origin(std::vector<zmq::message_t>& frames) {
  std::string origin = "zmq";
  try {
    origin += std::string(" ") + frames.back().gets("Peer-Address");
  } catch (const zmq::error_t&) {  // ipc:// and inproc:// have no peer address
  }
  if (frames.size() < 2)
    return origin;
  const std::string id = frames.front().to_string().substr(0, 32);
  const bool printable = std::all_of(id.begin(), id.end(), [](unsigned char c) { return c > 32 && c < 127; });
  std::string shown;
  for (unsigned char c : id)
    shown += printable ? std::string(1, char(c)) : fmt::format("{:02x}", c);
  return origin + " id " + shown;
}

enum class handed { sent, full, gone };

// Hands `result` to the client at `route`: `full` when its queue is full now, `gone` when no
// such client is connected (as after a restart of either side). The socket is ROUTER_MANDATORY,
// and a send never blocks the serving thread.
handed reply(zmq::socket_t& socket, const ReplyRoute& route, const EvalResult& result) {
  try {
    for (const auto& frame : route.frames())
      if (!socket.send(zmq::buffer(frame), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
        return handed::full;
    return socket.send(zmq::buffer(encode_eval_result(result, route.json())), zmq::send_flags::dontwait)
               ? handed::sent
               : handed::full;
  } catch (const zmq::error_t&) {  // EHOSTUNREACH
    return handed::gone;
  }
}

// How long the last answers of a stopping server (the clients of what was left unfinished) may
// wait for their clients to take them: a burst of them goes past ZeroMQ's queue of 1,000 a client.
constexpr auto last_answers_limit = std::chrono::seconds(5);

// What the serve loop's thread does: the sockets. Every decision is the API service actor's
// (actors/api_service.hpp); this hands it what clients send and sends what it has for them.
class serve_loop {
 public:
  serve_loop(caf::actor_system& system, const eval_service_setup& setup, const volatile std::sig_atomic_t& stop)
      : setup(setup), stop(stop), socket(*setup.socket), http(setup.http), self(system) {
    api_service_config config = setup.service;
    config.outbox = outbox;
    api = spawn_api_service(system, std::move(config));
  }
  ~serve_loop() { self->send_exit(api, caf::exit_reason::user_shutdown); }

  size_t run() {
    // SIGTERM: no new requests; those in flight get drain_timeout to finish, then an error.
    std::optional<std::chrono::steady_clock::time_point> drain_until;
    for (;;) {
      if (stop && !drain_until) {
        drain_until = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::nanoseconds>(setup.service.drain_timeout);
        self->send(api, drain_atom::value);
        spdlog::info("kgym serve: stopping; requests in flight get up to {:.0f} s",
                     setup.service.drain_timeout.count());
      }
      send_what_the_service_has(drain_until.has_value());
      // Drained: nothing in flight and no request left unread (each still waiting in the socket
      // is refused, not dropped: a client that sent a burst before the stop hears of all of it).
      if (drain_until && ((outbox->drained() && !request_waiting()) || std::chrono::steady_clock::now() > *drain_until))
        break;
      zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                                 {nullptr, outbox->wake_fd(), ZMQ_POLLIN, 0},
                                 {nullptr, http ? http->wake_fd() : outbox->wake_fd(), static_cast<short>(http ? ZMQ_POLLIN : 0), 0}};
      try {
        zmq::poll(items, 3, std::chrono::milliseconds(200));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR)
          continue;  // a signal: the loop's first lines decide
        throw;
      }
      if (http && (items[2].revents & ZMQ_POLLIN))
        for (auto& [id, request] : http->take())
          self->send(api, http_atom::value, http_call(id, std::move(request)));
      if (!(items[0].revents & ZMQ_POLLIN))
        continue;
      // Every request waiting now (up to 256) in this turn: one poll for a burst, not one each.
      for (int n = 0; n < 256; ++n) {
        std::vector<zmq::message_t> frames;
        if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait))
          break;
        if (frames.size() < 2)
          continue;
        auto decoded = decode_eval_request(frames.back().to_string(), setup.max_request_bytes);
        self->send(api, submit_atom::value, std::move(decoded.request), route_of(frames, decoded.json),
                   zmq_origin(frames), std::move(decoded.error));
      }
    }
    ServeStatus end;
    self->request(api, caf::infinite, finish_atom::value)
        .receive([&](const ServeStatus& counts) { end = counts; },
                 [&](const caf::error& e) { spdlog::warn("kgym serve: the API service did not finish: {}",
                                                         self->system().render(e)); });
    send_last_answers();  // the clients of what was left unfinished are told
    socket.close();  // sends what ZeroMQ still holds (linger: 1 s)
    spdlog::info("kgym serve: stopped after {} answers and {} refusals", end.answered(), end.refused());
    return static_cast<size_t>(end.answered());
  }

 private:
  static HttpCall http_call(uint64_t id, http_request&& r) {
    HttpCall call;
    call.set_id(id);
    call.set_method(std::move(r.method));
    call.set_path(std::move(r.path));
    call.mutable_query()->insert(r.query.begin(), r.query.end());
    call.mutable_headers()->insert(r.headers.begin(), r.headers.end());
    call.set_body(std::move(r.body));
    call.set_peer(std::move(r.peer));
    return call;
  }

  void answer_http(api_delivery& d) {
    if (http)
      http->answer(d.call, {d.status, std::move(d.body), std::move(d.content_type)});
  }

  bool request_waiting() {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    return zmq::poll(&item, 1, std::chrono::milliseconds(0)) > 0;
  }

  // What the service has for clients, and what a full client queue held back while stopping.
  std::vector<api_delivery> to_send() {
    std::vector<api_delivery> items = std::move(held);
    held.clear();
    for (auto& d : outbox->take())
      items.push_back(std::move(d));
    return items;
  }

  // Sends what the service has for clients; tells it which answers were delivered (to journal)
  // and which could not be (to try again). While `stopping`, a reply its client cannot take now
  // (a refusal: answers go back to the service) is held for the next turn, not dropped.
  void send_what_the_service_has(bool stopping) {
    if (const std::string failure = outbox->failure(); !failure.empty())
      throw std::runtime_error(failure);
    std::vector<std::string> delivered;
    for (auto& d : to_send()) {
      if (d.http) {
        answer_http(d);
        continue;
      }
      const handed h = reply(socket, d.route, d.answer);
      if (h == handed::sent) {
        if (d.journaled)
          delivered.push_back(d.answer.request_id());
      } else if (d.redeliver) {
        self->send(api, undelivered_atom::value, std::move(d.route), std::move(d.answer), d.retry_until_ns);
      } else if (stopping && h == handed::full) {
        held.push_back(std::move(d));
      }
    }
    if (!delivered.empty())
      self->send(api, delivered_atom::value, std::move(delivered));
  }

  // What the service has at the end, each answer sent once its client can take it (up to
  // last_answers_limit in all); what could not be is logged: the journal, if any, has it.
  void send_last_answers() {
    std::vector<api_delivery> left = to_send();
    const auto until = std::chrono::steady_clock::now() + last_answers_limit;
    size_t gone = 0;
    for (;;) {
      std::vector<api_delivery> full;
      for (auto& d : left) {
        if (d.http) {
          answer_http(d);
          continue;
        }
        const handed h = reply(socket, d.route, d.answer);
        if (h == handed::full)
          full.push_back(std::move(d));
        gone += h == handed::gone;
      }
      left = std::move(full);
      if (left.empty() || std::chrono::steady_clock::now() > until)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!left.empty() || gone > 0)
      spdlog::warn("kgym serve: {} last answers not taken by their clients within {} s, {} for clients gone",
                   left.size(), last_answers_limit.count(), gone);
  }

  const eval_service_setup& setup;
  const volatile std::sig_atomic_t& stop;
  zmq::socket_t& socket;
  http_front* http;
  std::shared_ptr<api_outbox> outbox = std::make_shared<api_outbox>();
  std::vector<api_delivery> held;  // stopping: replies whose clients' queues were full, tried again
  caf::scoped_actor self;  // every message to the service from this one sender: they arrive in order
  api_service_actor api;
};

}  // namespace

size_t run_eval_service(caf::actor_system& system, const eval_service_setup& setup,
                        const volatile std::sig_atomic_t& stop) {
  return serve_loop(system, setup, stop).run();
}

}  // namespace kgym
