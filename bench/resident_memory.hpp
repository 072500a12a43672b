// What the C++ benchmarks read of their own process: resident memory, from /proc.
#pragma once

#include <fstream>
#include <string>

namespace kgym::bench {

// Resident memory now (kB); 0 where /proc says nothing.
inline long rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> value;
      return value;
    }
    status.ignore(4096, '\n');
  }
  return 0;
}

}  // namespace kgym::bench
