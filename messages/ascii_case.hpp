// ASCII case for names that travel as text: the schema's enum names on command lines,
// HTTP header names. One place, so a name is compared the same way everywhere.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace kgym {

inline std::string ascii_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

inline std::string ascii_upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

}  // namespace kgym
