#include "cli/args.hpp"

namespace kgym::cli {

args::args(const std::vector<std::string>& argv, const std::set<std::string>& with_value,
           const std::set<std::string>& flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (flags.count(name) && !inline_value) {
      flags_.insert(name);
    } else if (with_value.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argv.size())
          throw std::invalid_argument("--" + name + " needs a value");
        value = argv[++i];
      }
      values_[name].push_back(value);
    } else {
      throw std::invalid_argument("unknown option --" + name + " (see --help)");
    }
  }
}

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

uint64_t args::whole(const std::string& name, uint64_t fallback) const {
  auto text = get(name);
  if (text.empty())
    return fallback;
  const bool digits = text.find_first_not_of("0123456789") == std::string::npos;
  try {
    if (digits)
      return std::stoull(text);
  } catch (const std::exception&) {  // out of range
  }
  throw std::invalid_argument("--" + name + " expects a whole number from 0 to 18446744073709551615, got '" + text +
                              "'");
}

}  // namespace kgym::cli
