// A parsed command line (command_line makes it): each option's values, the flags given, the
// positional values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "messages/enum_names.hpp"

namespace kgym::cli {

// `text` as a whole number from 0 to 2^64-1, exactly: digits only (no sign, no fraction, no
// base prefix), in range; none otherwise.
std::optional<uint64_t> whole_number(const std::string& text);

class args {
 public:
  args(std::map<std::string, std::vector<std::string>> values, std::set<std::string> flags,
       std::vector<std::string> positional)
      : values_(std::move(values)), flags_(std::move(flags)), positional_(std::move(positional)) {}
  bool has(const std::string& name) const { return flags_.count(name) || values_.count(name); }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> all(const std::string& name) const;
  double number(const std::string& name, double fallback) const;
  // A whole number >= 0, exactly (64-bit: seeds above 2^53 survive, which a double rounds);
  // anything else (a fraction, a sign, text) is refused with the option's name.
  uint64_t whole(const std::string& name, uint64_t fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

// --name's value as a value of the schema's enum E ("cuda" for CUDA), `fallback` when not
// given; anything else is refused with the names E accepts.
template <class E>
E choice(const args& a, const std::string& name, std::optional<E> fallback = std::nullopt) {
  if (fallback && !a.has(name))
    return *fallback;
  const std::string text = a.get(name);
  if (auto value = enum_named<E>(text))
    return *value;
  throw std::invalid_argument("--" + name + " must be " + enum_choices<E>() + ", got '" + text + "'");
}

}  // namespace kgym::cli
