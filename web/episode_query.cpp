#include "web/episode_query.hpp"

#include "messages/ascii_case.hpp"

#include <algorithm>
#include <cctype>

namespace kgym::web {

EpisodeSummary summarize(const Episode& finished) {
  EpisodeSummary s;
  s.set_episode_id(finished.episode_id());
  s.set_task_id(finished.task_id());
  s.set_iteration(finished.iteration());
  s.set_state(EPISODE_FINISHED);
  s.set_turn(finished.turns_size());
  s.set_turns(finished.turns_size());
  s.set_wall_s(finished.wall_s());
  for (const auto& turn : finished.turns())
    if (turn.result().verdict() == OK)
      s.set_best_speedup(std::max(s.best_speedup(), turn.result().speedup()));
  if (finished.turns_size() > 0) {
    const Turn& last = finished.turns(finished.turns_size() - 1);
    s.set_last_verdict(last.result().verdict());
    s.set_last_reward(last.reward().total());
  }
  return s;
}

EpisodeSummary summarize(const EpisodeStatus& running) {
  EpisodeSummary s;
  s.set_episode_id(running.episode_id());
  s.set_task_id(running.task_id());
  s.set_iteration(running.iteration());
  s.set_state(EPISODE_RUNNING);
  s.set_turn(running.turn());
  s.set_turns(running.turns());
  s.set_stage(running.stage());
  s.set_last_verdict(running.last_verdict());
  s.set_last_reward(running.last_reward());
  s.set_updated_unix_s(running.updated_unix_s());
  s.set_elapsed_s(running.elapsed_s());
  return s;
}

std::optional<episode_filter> parse_filter(const std::map<std::string, std::string>& query, std::string* error) {
  episode_filter f;
  for (const auto& [key, value] : query) {
    if (key == "state") {
      if (value == "running")
        f.state = EPISODE_RUNNING;
      else if (value == "finished")
        f.state = EPISODE_FINISHED;
      else if (!value.empty()) {
        *error = "state must be running or finished, not '" + value + "'";
        return std::nullopt;
      }
    } else if (key == "task") {
      f.task = value;
    } else if (key == "verdict") {
      Verdict v = VERDICT_UNSPECIFIED;
      if (!value.empty() && (!Verdict_Parse(ascii_upper(value), &v) || v == VERDICT_UNSPECIFIED)) {
        *error = "verdict '" + value + "' is none of kgym's verdicts (OK, INCORRECT, HACKED, ...)";
        return std::nullopt;
      }
      f.verdict = v;
    } else if (key == "limit") {
      bool digits = !value.empty() && value.size() <= 9 &&
                    std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); });
      if (!digits || std::stoul(value) == 0 || std::stoul(value) > max_episode_limit) {
        *error = "limit must be a number from 1 to " + std::to_string(max_episode_limit);
        return std::nullopt;
      }
      f.limit = std::stoul(value);
    } else {
      *error = "unknown filter '" + key + "' (state, task, verdict, limit)";
      return std::nullopt;
    }
  }
  return f;
}

bool matches(const EpisodeSummary& summary, const episode_filter& filter) {
  return (filter.state == EPISODE_STATE_UNSPECIFIED || summary.state() == filter.state) &&
         (filter.task.empty() || summary.task_id() == filter.task) &&
         (filter.verdict == VERDICT_UNSPECIFIED || summary.last_verdict() == filter.verdict);
}

EpisodeList select(const std::vector<EpisodeSummary>& running, const std::vector<EpisodeSummary>& finished,
                   const episode_filter& filter) {
  EpisodeList list;
  list.set_finished_stored(static_cast<int64_t>(finished.size()));
  auto take = [&](const EpisodeSummary& s) {
    if (!matches(s, filter))
      return;
    list.set_matched(list.matched() + 1);
    if (static_cast<size_t>(list.episodes_size()) < filter.limit)
      *list.add_episodes() = s;
  };
  for (const auto& s : running)
    take(s);
  for (auto it = finished.rbegin(); it != finished.rend(); ++it)
    take(*it);
  return list;
}

}  // namespace kgym::web
