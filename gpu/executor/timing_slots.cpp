#include "gpu/executor/timing_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>

namespace kgym {

namespace {

// More than any host has GPUs; timing_cores_for gives no cores past what the host's cores allow.
constexpr int slot_limit = 64;

}  // namespace

int claim_free_timing_slot(const std::string& dir, int limit, std::vector<int>* held) {
  for (int slot = 0; slot < limit; ++slot) {
    const std::string path = dir + "/kgym-timing-slot-" + std::to_string(slot) + ".lock";
    // Read-only is enough for a lock, and opens a file another user created.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      held->push_back(fd);
      return slot;
    }
    ::close(fd);
  }
  return -1;
}

int host_timing_slot(int local) {
  static std::mutex mutex;
  static std::map<int, int> claimed;  // local slot -> host slot
  static std::vector<int> held;       // open for the process's lifetime: the locks
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = claimed.find(local); it != claimed.end())
    return it->second;
  std::error_code ec;
  const std::string dir = std::filesystem::temp_directory_path(ec).string();
  const int slot = ec || dir.empty() ? -1 : claim_free_timing_slot(dir, slot_limit, &held);
  return claimed[local] = slot >= 0 ? slot : local;
}

}  // namespace kgym
