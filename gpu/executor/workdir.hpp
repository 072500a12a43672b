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

struct directory_use {
  int64_t bytes = 0;    // what the files take on disk (st_blocks), directories included
  int64_t entries = 0;  // files, directories and links under the root
  bool more = false;    // stopped at the walk's limit of entries: more were there
};

// Walks `root` without following a link (each directory opened O_NOFOLLOW from its parent),
// at most `max_entries` entries. The executor runs as the owner of what is under it: a
// directory it cannot read (mode 000, as a candidate may leave one to hide from the count or
// from removal) is made 0700 first, and with `unlock_all` every directory is (so the tree
// can be removed).
directory_use directory_use_of(const std::filesystem::path& root, int64_t max_entries, bool unlock_all = false);

// Unmounts every mount at or under `path` (lazily: a process still in it cannot stop
// that), then removes the tree.
void remove_workdir(const std::filesystem::path& path);

}  // namespace kgym
