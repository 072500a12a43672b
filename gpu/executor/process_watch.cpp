#include "gpu/executor/process_watch.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kgym {

namespace {

// Fields after the command name in /proc/PID/stat: state ppid pgrp session ... rss is 22nd.
bool read_stat(const char* pid, long* session, long* rss_pages) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f)
    return false;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p)
    return false;
  char state;
  long ppid, pgrp, sess;
  long skip;
  long rss;
  int got = std::sscanf(p + 2, "%c %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld",
                        &state, &ppid, &pgrp, &sess, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip,
                        &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &rss);
  if (got != 22)
    return false;
  *session = sess;
  *rss_pages = rss;
  return true;
}

}  // namespace

int64_t session_rss_bytes(pid_t session) {
  DIR* dir = ::opendir("/proc");
  if (!dir)
    return 0;
  int64_t total = 0;
  static const long page = ::sysconf(_SC_PAGESIZE);
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
      continue;
    long sess = 0, rss = 0;
    if (read_stat(entry->d_name, &sess, &rss) && sess == session)
      total += static_cast<int64_t>(rss) * page;
  }
  ::closedir(dir);
  return total;
}

int64_t cgroup_memory_bytes(const std::string& usage_file) {
  FILE* f = std::fopen(usage_file.c_str(), "r");
  if (!f)
    return 0;
  long long bytes = 0;
  if (std::fscanf(f, "%lld", &bytes) != 1)
    bytes = 0;
  std::fclose(f);
  return bytes;
}

void kill_group(pid_t group) {
  if (group > 1)
    ::kill(-group, SIGKILL);
}

}  // namespace kgym
