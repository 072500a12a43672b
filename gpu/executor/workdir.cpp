#include "gpu/executor/workdir.hpp"

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kgym {

namespace fs = std::filesystem;

namespace {

// Mount points (/proc/self/mountinfo's fifth field, octal escapes undone) at or under `root`.
std::vector<std::string> mounts_under(const std::string& root) {
  std::vector<std::string> found;
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string point;
    for (int i = 0; i < 5; ++i) fields >> point;
    std::string unescaped;
    for (size_t i = 0; i < point.size(); ++i) {
      if (point[i] == '\\' && i + 3 < point.size()) {
        unescaped += static_cast<char>(std::stoi(point.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        unescaped += point[i];
      }
    }
    if (unescaped == root || unescaped.rfind(root + "/", 0) == 0)
      found.push_back(unescaped);
  }
  return found;
}

}  // namespace

disk_use disk_use_of(const fs::path& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0)
    return {};
  return {static_cast<int64_t>(s.f_blocks - s.f_bfree) * static_cast<int64_t>(s.f_frsize),
          static_cast<int64_t>(s.f_blocks) * static_cast<int64_t>(s.f_frsize)};
}

void remove_workdir(const fs::path& path) {
  std::error_code ignored;
  const fs::path absolute = fs::weakly_canonical(path, ignored);
  auto points = mounts_under(absolute.string());
  std::sort(points.rbegin(), points.rend());  // the deepest first
  for (const auto& point : points)
    ::umount2(point.c_str(), MNT_DETACH);
  fs::remove_all(path, ignored);
}

}  // namespace kgym
