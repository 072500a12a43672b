#include "pipeline/run_dir.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "messages/stored_upgrade.hpp"
#include "messages/json.hpp"
#include "pipeline/file_io.hpp"

namespace fs = std::filesystem;

namespace kgym::run_dir {

std::string config_path(const std::string& dir) { return (fs::path(dir) / "config.json").string(); }
std::string episodes_path(const std::string& dir) { return (fs::path(dir) / "episodes.pb").string(); }
std::string metrics_path(const std::string& dir) { return (fs::path(dir) / "metrics.jsonl").string(); }
std::string monitor_port_path(const std::string& dir) { return (fs::path(dir) / "monitor.port").string(); }
std::string web_port_path(const std::string& dir) { return (fs::path(dir) / "web.port").string(); }
std::string log_path(const std::string& dir) { return (fs::path(dir) / "train.log").string(); }

namespace {

std::string checkpoint_dir(const std::string& dir) { return (fs::path(dir) / "checkpoints").string(); }


}  // namespace

void create(const std::string& dir, const TrainConfig& config) {
  if (fs::exists(config_path(dir)))
    throw std::invalid_argument(dir + " already holds a run: continue it with kgym train --resume " + dir +
                                ", or choose another --run-dir");
  fs::create_directories(checkpoint_dir(dir));
  write_atomically(config_path(dir), to_json(config, true) + "\n");
}

TrainConfig read_config(const std::string& dir) {
  TrainConfig config;
  std::string error = from_json(read_file(config_path(dir)), &config);
  if (!error.empty())
    throw std::invalid_argument(config_path(dir) + ": " + error);
  return config;
}

void save_checkpoint(const std::string& dir, const EmbeddedPolicy& policy) {
  char name[64];
  std::snprintf(name, sizeof name, "policy-%06lld.pb", static_cast<long long>(policy.version()));
  fs::create_directories(checkpoint_dir(dir));
  write_atomically((fs::path(checkpoint_dir(dir)) / name).string(), policy.SerializeAsString());
}

std::optional<EmbeddedPolicy> latest_checkpoint(const std::string& dir) {
  if (!fs::exists(checkpoint_dir(dir)))
    return std::nullopt;
  std::string best;
  for (const auto& entry : fs::directory_iterator(checkpoint_dir(dir))) {
    std::string name = entry.path().filename().string();
    if (name.rfind("policy-", 0) == 0 && entry.path().extension() == ".pb" && name > best)
      best = name;
  }
  if (best.empty())
    return std::nullopt;
  EmbeddedPolicy policy;
  std::string path = (fs::path(checkpoint_dir(dir)) / best).string();
  if (!policy.ParseFromString(read_file(path)))
    throw std::runtime_error(path + " is not a policy checkpoint");
  upgrade_stored(&policy);
  return policy;
}

void append_metrics(const std::string& dir, const IterationMetrics& metrics) {
  std::ofstream out(metrics_path(dir), std::ios::app);
  out << to_json(metrics, true) << "\n";
  out.flush();
  if (!out)
    throw std::runtime_error("cannot append to " + metrics_path(dir));
}

void record_iteration(const std::string& dir, const IterationMetrics& metrics, const EmbeddedPolicy& checkpoint) {
  if (dir.empty())
    return;
  append_metrics(dir, metrics);
  save_checkpoint(dir, checkpoint);
}

std::vector<IterationMetrics> read_metrics(const std::string& dir) {
  std::vector<IterationMetrics> lines;
  std::ifstream in(metrics_path(dir));
  std::string line;
  while (std::getline(in, line)) {
    IterationMetrics m;
    if (!line.empty() && from_json(line, &m).empty())
      lines.push_back(m);  // a line cut short by a kill is skipped
  }
  return lines;
}

void keep_metrics_before(const std::string& dir, int64_t iteration) {
  std::string kept;
  for (const auto& m : read_metrics(dir))
    if (m.iteration() < iteration)
      kept += to_json(m, true) + "\n";
  write_atomically(metrics_path(dir), kept);
}

}  // namespace kgym::run_dir
