#include "gpu/executor/process_watch.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kgym {

namespace {

// Fields after the command name in /proc/PID/stat: state ppid pgrp session ... rss is 22nd.
bool read_stat(const char* pid, long* session, long* rss_pages, long* threads = nullptr) {
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
  long rss, num_threads;  // fields 24 and 20
  int got = std::sscanf(p + 2, "%c %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld",
                        &state, &ppid, &pgrp, &sess, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip,
                        &skip, &skip, &skip, &skip, &skip, &num_threads, &skip, &skip, &skip, &rss);
  if (got != 22)
    return false;
  *session = sess;
  *rss_pages = rss;
  if (threads)
    *threads = num_threads;
  return true;
}

// Calls `visit(pid)` with every process's pid (its /proc directory's name).
template <class Visit>
void for_each_process(Visit visit) {
  DIR* dir = ::opendir("/proc");
  if (!dir)
    return;
  while (dirent* entry = ::readdir(dir))
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9')
      visit(entry->d_name);
  ::closedir(dir);
}

const long page_bytes = ::sysconf(_SC_PAGESIZE);

// What a process holds: its resident size, or with `proportional` its proportional set size
// (/proc/PID/smaps_rollup: each page it shares divided among the processes that map it), so a
// page a parent shares with its forks counts once over all of them, not once per child; the
// resident size where smaps_rollup cannot be read (a process that made itself undumpable: its
// resident size is never less).
int64_t held_bytes(const char* pid, long rss_pages, bool proportional) {
  if (!proportional)
    return static_cast<int64_t>(rss_pages) * page_bytes;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%s/smaps_rollup", pid);
  if (FILE* f = std::fopen(path, "r")) {
    char line[256];
    long long kib = -1;
    while (kib < 0 && std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Pss: %lld kB", &kib) != 1)
        kib = -1;
    std::fclose(f);
    if (kib >= 0)
      return static_cast<int64_t>(kib) << 10;
  }
  return static_cast<int64_t>(rss_pages) * page_bytes;
}

// The inodes of memfd files a process maps (their touched pages are in its RSS already).
void mapped_memfds(const std::string& proc, std::set<unsigned long>* inodes) {
  FILE* f = std::fopen((proc + "/maps").c_str(), "r");
  if (!f)
    return;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long inode = 0;
    char path[256] = "";
    if (std::strstr(line, "/memfd:") &&
        std::sscanf(line, "%*s %*s %*s %*s %lu %255s", &inode, path) == 2)
      inodes->insert(inode);
  }
  std::fclose(f);
}

}  // namespace

int64_t session_memory_bytes(pid_t session, bool proportional) {
  int64_t total = 0;
  for_each_process([&](const char* pid) {
    long sess = 0, rss = 0;
    if (read_stat(pid, &sess, &rss) && sess == session)
      total += held_bytes(pid, rss, proportional);
  });
  return total;
}

uid_t process_uid(pid_t pid) {
  struct stat st {};
  const std::string path = "/proc/" + std::to_string(pid);
  return ::stat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

namespace {

// Memory held by every process whose /proc directory `member` accepts (held_bytes), plus the
// memfd files they hold open but do not map (each counted once: its touched pages, not its size).
template <class Member>
int64_t memory_of(Member member, bool proportional) {
  int64_t total = 0;
  std::map<unsigned long, int64_t> held;  // memfd inode -> bytes it holds
  std::set<unsigned long> mapped;
  for_each_process([&](const char* pid) {
    const std::string proc = std::string("/proc/") + pid;
    long sess = 0, rss = 0;
    if (!member(proc) || !read_stat(pid, &sess, &rss))
      return;
    total += held_bytes(pid, rss, proportional);
    mapped_memfds(proc, &mapped);
    DIR* fds = ::opendir((proc + "/fd").c_str());
    if (!fds)
      return;
    while (dirent* fd = ::readdir(fds)) {
      const std::string link = proc + "/fd/" + fd->d_name;
      char target[64];
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      struct stat file {};
      if (n > 7 && std::strncmp(target, "/memfd:", 7) == 0 && ::stat(link.c_str(), &file) == 0)
        held[file.st_ino] = static_cast<int64_t>(file.st_blocks) * 512;
    }
    ::closedir(fds);
  });
  for (const auto& [inode, bytes] : held)
    if (!mapped.count(inode))
      total += bytes;
  return total;
}

std::string namespace_link(const std::string& proc) {
  char target[64];
  const ssize_t n = ::readlink((proc + "/ns/pid").c_str(), target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

}  // namespace

int64_t uid_memory_bytes(uid_t uid, bool proportional) {
  return memory_of(
      [uid](const std::string& proc) {
        struct stat st {};
        return ::stat(proc.c_str(), &st) == 0 && st.st_uid == uid;
      },
      proportional);
}

std::string pid_namespace_of(pid_t pid) {
  return namespace_link(pid > 0 ? "/proc/" + std::to_string(pid) : std::string("/proc/self"));
}

int64_t pid_namespace_memory_bytes(const std::string& pid_namespace, bool proportional) {
  return memory_of([&pid_namespace](const std::string& proc) { return namespace_link(proc) == pid_namespace; },
                   proportional);
}

int64_t pid_namespace_tasks(const std::string& pid_namespace) {
  int64_t total = 0;
  for_each_process([&](const char* pid) {
    long session = 0, rss = 0, threads = 0;
    if (namespace_link(std::string("/proc/") + pid) == pid_namespace && read_stat(pid, &session, &rss, &threads))
      total += threads;
  });
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
