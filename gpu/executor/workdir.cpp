#include "gpu/executor/workdir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

namespace {

// A directory `name` under `parent` opened for reading, never through a link; made 0700 first
// where that is what stops us (through an O_PATH descriptor, which names the directory itself:
// a chmod by name would follow a link put there meanwhile). -1 if it cannot be.
int open_directory(int parent, const char* name, bool unlock) {
  const int path = ::openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
  if (path < 0)
    return -1;
  const std::string self = "/proc/self/fd/" + std::to_string(path);
  if (unlock)
    ::chmod(self.c_str(), 0700);
  int fd = ::openat(path, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && ::chmod(self.c_str(), 0700) == 0)
    fd = ::openat(path, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ::close(path);
  return fd;
}

}  // namespace

directory_use directory_use_of(const fs::path& root, int64_t max_entries, bool unlock_all) {
  directory_use use;
  std::vector<int> pending;
  if (int fd = open_directory(AT_FDCWD, root.c_str(), unlock_all); fd >= 0)
    pending.push_back(fd);
  while (!pending.empty()) {
    DIR* dir = ::fdopendir(pending.back());
    pending.pop_back();
    if (!dir)
      continue;
    while (const dirent* e = ::readdir(dir)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0)
        continue;
      if (++use.entries > max_entries) {
        use.more = true;
        break;
      }
      struct stat s {};
      if (::fstatat(::dirfd(dir), e->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      use.bytes += static_cast<int64_t>(s.st_blocks) * 512;
      if (S_ISDIR(s.st_mode))
        if (int fd = open_directory(::dirfd(dir), e->d_name, unlock_all); fd >= 0)
          pending.push_back(fd);
    }
    ::closedir(dir);
    if (use.more)
      break;
  }
  for (int fd : pending)
    ::close(fd);
  return use;
}

void remove_workdir(const fs::path& path) {
  std::error_code ignored;
  const fs::path absolute = fs::weakly_canonical(path, ignored);
  auto points = mounts_under(absolute.string());
  std::sort(points.rbegin(), points.rend());  // the deepest first
  for (const auto& point : points)
    ::umount2(point.c_str(), MNT_DETACH);
  fs::remove_all(path, ignored);
  if (fs::exists(path, ignored)) {  // a directory its candidate locked (mode 000): unlock, again
    directory_use_of(path, int64_t{1} << 40, /*unlock_all=*/true);
    fs::remove_all(path, ignored);
  }
}

}  // namespace kgym
