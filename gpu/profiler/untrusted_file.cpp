#include "gpu/profiler/untrusted_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kgym {

std::optional<std::string> read_untrusted_file(const std::string& path, size_t max_bytes, bool tail) {
  // O_NONBLOCK: opening a FIFO for reading returns at once (and is then refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  struct stat s {};
  if (::fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  const size_t size = static_cast<size_t>(s.st_size);
  const size_t start = tail && size > max_bytes ? size - max_bytes : 0;
  std::string text(std::min(size - start, max_bytes), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(start + got));
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  return text;
}

}  // namespace kgym
