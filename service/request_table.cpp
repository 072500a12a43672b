#include "service/request_table.hpp"

#include <algorithm>

namespace kgym {

request_table::seen request_table::submit_zmq(const std::string& id, const ReplyRoute& route) {
  auto [it, added] = entries_.try_emplace(id);
  if (it->second.done)
    return seen::answered;
  it->second.zmq.push_back({route, !added});
  if (!added)
    return seen::in_progress;
  ++in_flight_;
  return seen::new_request;
}

request_table::seen request_table::submit_http(const std::string& id) {
  auto [it, added] = entries_.try_emplace(id);
  if (it->second.done)
    return seen::answered;
  if (!added)
    return seen::in_progress;
  ++in_flight_;
  return seen::new_request;
}

void request_table::restore_unfinished(const std::string& id, const std::optional<ReplyRoute>& route) {
  auto [it, added] = entries_.try_emplace(id);
  if (added)
    ++in_flight_;
  if (route)
    it->second.zmq.push_back({*route, false});
}

void request_table::restore_answer(const EvalResult& answer, time_point now) {
  auto& e = entries_[answer.request_id()];
  e.done = true;
  e.answer = answer;
  answered_order_.emplace_back(now, answer.request_id());
  forget_old(now);
}

const EvalResult* request_table::answer_of(const std::string& id) const {
  auto found = entries_.find(id);
  return found != entries_.end() && found->second.done ? &found->second.answer : nullptr;
}

bool request_table::waits_over_zmq(const std::string& id) const {
  auto found = entries_.find(id);
  return found != entries_.end() && !found->second.zmq.empty();
}

void request_table::long_poll(const std::string& id, const std::string& connection, time_point deadline) {
  entries_[id].http.push_back({connection, deadline});
  polls_.emplace(deadline, std::make_pair(id, connection));
}

std::vector<std::pair<std::string, std::string>> request_table::expired_polls(time_point now) {
  std::vector<std::pair<std::string, std::string>> expired;
  for (auto poll = polls_.begin(); poll != polls_.end() && poll->first <= now; poll = polls_.erase(poll)) {
    const auto& [id, connection] = poll->second;
    auto found = entries_.find(id);
    if (found == entries_.end())
      continue;
    auto& waiting = found->second.http;
    auto w = std::find_if(waiting.begin(), waiting.end(), [&](const http_waiter& h) {
      return h.connection == connection && h.deadline == poll->first;
    });
    if (w == waiting.end())
      continue;  // answered before its deadline
    expired.emplace_back(id, connection);
    waiting.erase(w);
  }
  return expired;
}

request_table::waiting request_table::finish(const EvalResult& answer, time_point now) {
  auto& e = entries_[answer.request_id()];
  waiting w;
  if (e.done)
    return w;  // answered already: the first answer stands
  e.done = true;
  e.answer = answer;
  w.zmq = std::move(e.zmq);
  for (auto& poll : e.http)
    w.http.push_back(std::move(poll.connection));
  e.zmq.clear();
  e.http.clear();
  if (in_flight_ > 0)
    --in_flight_;
  answered_order_.emplace_back(now, answer.request_id());
  forget_old(now);
  return w;
}

void request_table::forget_old(time_point now) {
  while (!answered_order_.empty() &&
         (answered_order_.size() > limits_.max_answers || answered_order_.front().first + limits_.keep < now)) {
    entries_.erase(answered_order_.front().second);
    answered_order_.pop_front();
  }
}

void request_table::redeliver_later(const ReplyRoute& route, const EvalResult& answer, time_point now) {
  redeliveries_.emplace_back(now + limits_.redeliver_every,
                             redelivery{route, answer, now + limits_.redeliver_for});
}

std::vector<request_table::redelivery> request_table::due(time_point now) {
  std::vector<redelivery> ready;
  for (auto r = redeliveries_.begin(); r != redeliveries_.end();) {
    if (r->first > now) {
      ++r;
      continue;
    }
    ready.push_back(std::move(r->second));
    r = redeliveries_.erase(r);
  }
  return ready;
}

void request_table::retry(redelivery r, time_point now) {
  if (r.until > now)
    redeliveries_.emplace_back(now + limits_.redeliver_every, std::move(r));
}

std::vector<std::pair<std::string, request_table::waiting>> request_table::unfinished() const {
  std::vector<std::pair<std::string, waiting>> left;
  for (const auto& [id, e] : entries_) {
    if (e.done)
      continue;
    waiting w{e.zmq, {}};
    for (const auto& poll : e.http)
      w.http.push_back(poll.connection);
    left.emplace_back(id, std::move(w));
  }
  return left;
}

}  // namespace kgym
