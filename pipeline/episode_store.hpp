// A run's append-only store of finished episodes: length-delimited protobuf records in one
// file. A record cut short by a kill is dropped on reading and cut off when the store is
// reopened, so a resumed run loses no finished episode and never reads a broken one.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym {

struct stored_episodes {
  std::vector<Episode> episodes;
  long valid_bytes = 0;     // the file up to the end of the last whole record
  bool truncated = false;   // bytes after it (a record cut short)
};

// Reads every whole record of `path` (a missing file is an empty store).
stored_episodes read_episodes(const std::string& path);

class episode_store {
 public:
  // Opens for appending; cuts a trailing partial record off first. Throws on I/O errors.
  explicit episode_store(const std::string& path);
  ~episode_store();
  episode_store(const episode_store&) = delete;
  episode_store& operator=(const episode_store&) = delete;

  // Writes one record and flushes it to the OS before returning (fsync with `durable`).
  void append(const Episode& episode, bool durable = false);

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace kgym
