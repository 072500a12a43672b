// A training run's directory: everything needed to inspect it and to resume it.
//   config.json       the run's TrainConfig (every field written out)
//   episodes.pb       append-only store of finished episodes (pipeline/episode_store)
//   metrics.jsonl     one IterationMetrics per trained iteration
//   checkpoints/      policy-<version>.pb, written atomically (temp file + rename)
//   monitor.port      where `kgym top` finds the run's monitor actor (loopback)
//   web.port          where `kgym train --web` serves the run's browser view (while it runs)
//   train.log         the run's log
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym::run_dir {

std::string config_path(const std::string& dir);
std::string episodes_path(const std::string& dir);
std::string metrics_path(const std::string& dir);
std::string monitor_port_path(const std::string& dir);
std::string web_port_path(const std::string& dir);
std::string log_path(const std::string& dir);

// Makes the directory and writes config.json; refuses a directory that already holds a run.
void create(const std::string& dir, const TrainConfig& config);
TrainConfig read_config(const std::string& dir);

void save_checkpoint(const std::string& dir, const EmbeddedPolicy& policy);
// The checkpoint with the highest version, if any.
std::optional<EmbeddedPolicy> latest_checkpoint(const std::string& dir);

void append_metrics(const std::string& dir, const IterationMetrics& metrics);
// An iteration's end: its metrics line first, its checkpoint second (a resumed run redoes every
// iteration whose checkpoint is missing and rewrites its metrics line). Empty `dir`: nothing.
void record_iteration(const std::string& dir, const IterationMetrics& metrics, const EmbeddedPolicy& checkpoint);
std::vector<IterationMetrics> read_metrics(const std::string& dir);
// Drops the lines of iterations >= `iteration` (a resumed run writes them again).
void keep_metrics_before(const std::string& dir, int64_t iteration);

}  // namespace kgym::run_dir
