#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace kgym {

// The names of a comma-separated list given in one environment variable ($KGYM_SANDBOX_ENV,
// $KGYM_SECRET_NAMES); empty entries are skipped.
inline std::vector<std::string> comma_separated(const std::string& list) {
  std::vector<std::string> names;
  for (size_t at = 0; at <= list.size();) {
    size_t end = std::min(list.find(',', at), list.size());
    if (end > at)
      names.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return names;
}

}  // namespace kgym
