#include "cli/args.hpp"

namespace kgym::cli {

std::string args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> args::all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

double args::number(const std::string& name, double fallback) const {
  auto text = get(name);
  if (text.empty())
    return fallback;
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used != text.size())
      throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw std::invalid_argument("--" + name + " expects a number, got '" + text + "'");
  }
}

std::optional<uint64_t> whole_number(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {  // out of range
    return std::nullopt;
  }
}

uint64_t args::whole(const std::string& name, uint64_t fallback) const {
  auto text = get(name);
  if (text.empty())
    return fallback;
  if (auto value = whole_number(text))
    return *value;
  throw std::invalid_argument("--" + name + " expects a whole number from 0 to 18446744073709551615, got '" + text +
                              "'");
}

}  // namespace kgym::cli
