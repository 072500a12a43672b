// What the browser view's episode table shows, as pure functions: an episode's summary line,
// the filter a query string asks for, and the selection (running first, then finished newest
// first, at most `limit`).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym::web {

EpisodeSummary summarize(const Episode& finished);
EpisodeSummary summarize(const EpisodeStatus& running);

struct episode_filter {
  EpisodeState state = EPISODE_STATE_UNSPECIFIED;  // unspecified: both
  std::string task;                                // exact task id; empty: any
  Verdict verdict = VERDICT_UNSPECIFIED;           // of the last turn; unspecified: any
  size_t limit = 100;
};

constexpr size_t max_episode_limit = 1000;

// ?state=running|finished&task=ID&verdict=OK&limit=N; an error text for anything else
// (an unknown key too: a misspelt filter must not silently match everything).
std::optional<episode_filter> parse_filter(const std::map<std::string, std::string>& query, std::string* error);

bool matches(const EpisodeSummary& summary, const episode_filter& filter);

// `running` in the monitor's order, `finished` oldest first (the store's order).
EpisodeList select(const std::vector<EpisodeSummary>& running, const std::vector<EpisodeSummary>& finished,
                   const episode_filter& filter);

}  // namespace kgym::web
