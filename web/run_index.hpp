// A run directory as the browser view reads it while the run writes it: the config once, the
// metrics when metrics.jsonl changes, and the episode store incrementally (new whole records
// from where the last refresh stopped; a record still being written waits for the next). Keeps
// a summary and the store offset of every finished episode, and reads an episode's full record
// only when it is asked for. Not thread-safe: the server holds a lock around it.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym::web {

class run_index {
 public:
  // Throws std::invalid_argument when `dir` holds no run (no config.json).
  explicit run_index(std::string dir);

  // Reads what the run appended since the last refresh.
  void refresh();

  const std::string& dir() const { return dir_; }
  const TrainConfig& config() const { return config_; }
  const std::vector<IterationMetrics>& metrics() const { return metrics_; }
  const std::vector<EpisodeSummary>& finished() const { return finished_; }  // the store's order
  const std::set<std::string>& tasks() const { return tasks_; }  // of the finished episodes
  // The finished episode's whole record, read from the store.
  std::optional<Episode> episode(const std::string& episode_id) const;

 private:
  struct place {
    int64_t offset = 0;  // of the record's body, after its length
    uint32_t size = 0;
  };
  void refresh_metrics();
  void refresh_episodes();
  // Indexes the whole records at the start of `data` (the store from read_to_ on); returns
  // the bytes they take.
  size_t parse_records(const std::string& data);

  std::string dir_;
  TrainConfig config_;
  std::vector<IterationMetrics> metrics_;
  int64_t metrics_size_ = -1;
  int64_t metrics_mtime_ns_ = -1;
  std::vector<EpisodeSummary> finished_;
  std::unordered_map<std::string, place> places_;
  std::set<std::string> tasks_;
  int64_t read_to_ = 0;  // the store's bytes up to the end of the last whole record read
};

}  // namespace kgym::web
