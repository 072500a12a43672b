#include "web/run_index.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "messages/stored_upgrade.hpp"
#include "pipeline/run_dir.hpp"
#include "web/episode_query.hpp"

namespace kgym::web {

run_index::run_index(std::string dir) : dir_(std::move(dir)) {
  std::ifstream probe(run_dir::config_path(dir_));
  if (!probe)
    throw std::invalid_argument(dir_ + " holds no kgym run (no " + run_dir::config_path(dir_) +
                                "): give the directory `kgym train --run-dir` wrote");
  config_ = run_dir::read_config(dir_);
  refresh();
}

void run_index::refresh() {
  refresh_metrics();
  refresh_episodes();
}

void run_index::refresh_metrics() {
  struct stat st {};
  if (::stat(run_dir::metrics_path(dir_).c_str(), &st) != 0) {
    metrics_.clear();
    metrics_size_ = metrics_mtime_ns_ = -1;
    return;
  }
  int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (st.st_size == metrics_size_ && mtime_ns == metrics_mtime_ns_)
    return;
  metrics_ = run_dir::read_metrics(dir_);  // small (a line an iteration); a resumed run rewrites it
  metrics_size_ = st.st_size;
  metrics_mtime_ns_ = mtime_ns;
}

void run_index::refresh_episodes() {
  std::ifstream in(run_dir::episodes_path(dir_), std::ios::binary);
  if (!in)
    return;
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (size < read_to_) {  // the store was cut back (a resumed run drops a partial record): read again
    finished_.clear();
    places_.clear();
    tasks_.clear();
    read_to_ = 0;
  }
  // In chunks (a store of 100,000 episodes is gigabytes); a chunk grows only for a record
  // larger than it.
  size_t chunk = 64u << 20;
  while (read_to_ < size) {
    std::string data(static_cast<size_t>(std::min<int64_t>(size - read_to_, static_cast<int64_t>(chunk))), '\0');
    in.clear();
    in.seekg(read_to_);
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    data.resize(static_cast<size_t>(in.gcount()));
    size_t at = parse_records(data);
    if (at == 0) {
      if (data.size() < chunk || static_cast<int64_t>(data.size()) == size - read_to_)
        return;  // a record still being written (or broken: the writer cuts it off on reopening)
      chunk *= 2;
    }
    read_to_ += static_cast<int64_t>(at);
  }
}

size_t run_index::parse_records(const std::string& data) {
  size_t at = 0;
  while (at < data.size()) {
    google::protobuf::io::CodedInputStream coded(reinterpret_cast<const uint8_t*>(data.data() + at),
                                                 static_cast<int>(data.size() - at));
    uint32_t body = 0;
    if (!coded.ReadVarint32(&body))
      break;
    size_t head = static_cast<size_t>(coded.CurrentPosition());
    if (body > data.size() - at - head)
      break;
    Episode episode;
    if (!episode.ParseFromArray(data.data() + at + head, static_cast<int>(body)))
      break;
    places_[episode.episode_id()] = place{read_to_ + static_cast<int64_t>(at + head), body};
    finished_.push_back(summarize(episode));
    tasks_.insert(episode.task_id());
    at += head + body;
  }
  return at;
}

std::optional<Episode> run_index::episode(const std::string& episode_id) const {
  auto it = places_.find(episode_id);
  if (it == places_.end())
    return std::nullopt;
  std::ifstream in(run_dir::episodes_path(dir_), std::ios::binary);
  std::string body(it->second.size, '\0');
  in.seekg(it->second.offset);
  in.read(body.data(), static_cast<std::streamsize>(body.size()));
  Episode episode;
  if (in.gcount() != static_cast<std::streamsize>(body.size()) || !episode.ParseFromString(body))
    return std::nullopt;
  upgrade_stored(&episode);
  return episode;
}

}  // namespace kgym::web
