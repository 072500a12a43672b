#include "pipeline/episode_store.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "messages/stored_upgrade.hpp"

namespace kgym {

stored_episodes read_episodes(const std::string& path) {
  stored_episodes out;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return out;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string data = bytes.str();
  google::protobuf::io::ArrayInputStream raw(data.data(), static_cast<int>(data.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(1 << 30);
  for (;;) {
    long at = static_cast<long>(coded.CurrentPosition());
    if (at == static_cast<long>(data.size()))
      break;
    uint32_t size = 0;
    Episode episode;
    if (!coded.ReadVarint32(&size) || static_cast<long>(size) > static_cast<long>(data.size()) - at) {
      out.truncated = true;
      break;
    }
    auto limit = coded.PushLimit(static_cast<int>(size));
    bool ok = episode.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage() &&
              coded.BytesUntilLimit() == 0;
    coded.PopLimit(limit);
    if (!ok) {
      out.truncated = true;
      break;
    }
    upgrade_stored(&episode);
    out.episodes.push_back(std::move(episode));
    out.valid_bytes = static_cast<long>(coded.CurrentPosition());
  }
  return out;
}

episode_store::episode_store(const std::string& path) {
  stored_episodes existing = read_episodes(path);
  if (existing.truncated && ::truncate(path.c_str(), existing.valid_bytes) != 0)
    throw std::runtime_error("cannot cut the partial record off " + path + ": " + std::strerror(errno));
  file_ = std::fopen(path.c_str(), "ab");
  if (!file_)
    throw std::runtime_error("cannot open the episode store " + path + ": " + std::strerror(errno));
}

episode_store::~episode_store() {
  if (file_)
    std::fclose(file_);
}

void episode_store::append(const Episode& episode, bool durable) {
  std::string record;
  {
    google::protobuf::io::StringOutputStream raw(&record);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.WriteVarint32(static_cast<uint32_t>(episode.ByteSizeLong()));
    episode.SerializeToCodedStream(&coded);
  }
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw std::runtime_error(std::string("writing the episode store failed: ") + std::strerror(errno));
  if (durable)
    ::fsync(::fileno(file_));
}

}  // namespace kgym
