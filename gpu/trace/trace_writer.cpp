#include "gpu/trace/trace_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "gpu/trace/trace_mac.hpp"

namespace kgym::trace_writer {

namespace {

std::mutex mutex;
int trace_fd = -1;
uint8_t key[trace_key_bytes];  // only here: never in a Python object
uint64_t next_seq = 0;         // records written so far
bool finished = false;

bool read_key(int fd) {
  size_t got = 0;
  while (got < sizeof key) {
    ssize_t n = ::read(fd, key + got, sizeof key - got);
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return got == sizeof key;
}

void write_all(const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0 && trace_fd >= 0) {
    ssize_t n = ::write(trace_fd, p, left);
    if (n <= 0)
      return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// Appends the line of `body`'s record (its MAC, the record, a newline) to `out`.
void append_line(std::string& out, const std::string& body) {
  std::string record = "{\"seq\":" + std::to_string(next_seq++) + "," + body + "}";
  out += trace_mac_hex(key, record);
  out += ' ';
  out += record;
  out += '\n';
}

void emit_locked(const std::string& body) {
  if (finished || trace_fd < 0)
    return;
  std::string line;
  append_line(line, body);
  write_all(line);
}

}  // namespace

bool start_from_environment() {
  std::lock_guard<std::mutex> lock(mutex);
  if (trace_fd >= 0 || finished)
    return false;  // once per process
  const char* key_fd = std::getenv("KGYM_TRACE_KEY_FD");
  const char* path = std::getenv("KGYM_TRACE_FILE");
  if (!key_fd || !path || !read_key(std::atoi(key_fd)))
    return false;
  trace_fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  return trace_fd >= 0;
}

void emit(const std::string& body) {
  std::lock_guard<std::mutex> lock(mutex);
  emit_locked(body);
}

void emit_all(const std::vector<std::string>& bodies) {
  std::lock_guard<std::mutex> lock(mutex);
  if (finished || trace_fd < 0)
    return;
  std::string lines;
  for (const auto& body : bodies)
    append_line(lines, body);
  write_all(lines);
}

std::string phase_call_json(int kind, int rep) {
  return "{\"kind\":" + std::to_string(kind) + ",\"rep\":" + std::to_string(rep) + "}";
}

void record_phase(int kind, int rep, uint64_t at_ns) {
  std::string body = "\"phase\":" + phase_call_json(kind, rep);
  body += ",\"at_ns\":" + std::to_string(at_ns);
  emit(body);
}

int finish() {
  std::lock_guard<std::mutex> lock(mutex);
  if (finished || trace_fd < 0)
    return -1;
  emit_locked("\"end\":{\"records\":" + std::to_string(next_seq) + "}");
  finished = true;
  ::close(trace_fd);
  trace_fd = -1;
  return 0;
}

void append_json_string(std::string& out, const char* text) {
  out += '"';
  for (const char* p = text ? text : ""; *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

}  // namespace kgym::trace_writer
