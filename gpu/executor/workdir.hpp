// An evaluation's directory on the host, seen from the executor: the candidate's part may be
// a tmpfs of its own (its private disk, mounted by the zygote), so removing it unmounts first.
#pragma once

#include <cstdint>
#include <filesystem>

namespace kgym {

struct disk_use {
  int64_t used_bytes = 0;
  int64_t total_bytes = 0;
};

// What the filesystem holding `path` has in use and in all (statvfs); zeros if unreadable.
disk_use disk_use_of(const std::filesystem::path& path);

// Unmounts every mount at or under `path` (lazily: a process still in it cannot stop
// that), then removes the tree.
void remove_workdir(const std::filesystem::path& path);

}  // namespace kgym
