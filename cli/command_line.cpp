#include "cli/command_line.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <sstream>

namespace kgym::cli {

namespace {
constexpr size_t name_column = 25;  // where the help's descriptions start
}

struct command_line::declared {
  enum kind_t { text, repeated, flag, positional, heading } kind;
  std::string name;        // without dashes; a positional's value name
  std::string value_name;  // "N"; for one_of, the choices joined by '|'
  std::string help;
  CLI::Option* option = nullptr;
  std::string env = {};
  bool required = false;
};

command_line::command_line(std::string name, std::string usage, std::string about)
    : name_(std::move(name)), usage_(std::move(usage)), about_(std::move(about)),
      app_(std::make_unique<CLI::App>("", "kgym " + name_)) {
  app_->set_help_flag();  // ours: --help, listed with the options, printed by help()
  flag("help", "this text");
}

command_line::~command_line() = default;
command_line::command_line(command_line&&) noexcept = default;

CLI::App& command_line::app() { return *app_; }

void command_line::declare(declared d) { declared_.push_back(std::move(d)); }

command_line& command_line::section(std::string title) {
  declare({declared::heading, "", "", std::move(title)});
  return *this;
}

command_line& command_line::text(const std::string& name, const std::string& value_name, const std::string& help) {
  auto* o = app().add_option("--" + name, help)->type_name(value_name)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  declare({declared::text, name, value_name, help, o});
  return *this;
}

command_line& command_line::repeated(const std::string& name, const std::string& value_name, const std::string& help) {
  auto* o = app().add_option("--" + name, help)->type_name(value_name)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                ->expected(1);
  declare({declared::repeated, name, value_name, help, o});
  return *this;
}

command_line& command_line::whole(const std::string& name, const std::string& value_name, const std::string& help) {
  text(name, value_name, help);
  declared_.back().option->check(CLI::Validator(
      [](std::string& text) {
        return whole_number(text) ? std::string() : "expects a whole number from 0 to 18446744073709551615, got '" + text + "'";
      },
      "WHOLE"));
  return *this;
}

command_line& command_line::number(const std::string& name, const std::string& value_name, const std::string& help) {
  text(name, value_name, help);
  declared_.back().option->check(CLI::Number);
  return *this;
}

command_line& command_line::one_of(const std::string& name, const std::vector<std::string>& names,
                                   const std::string& help) {
  std::string joined;
  for (const auto& n : names)
    joined += (joined.empty() ? "" : "|") + n;
  text(name, joined, help);
  declared_.back().option->check(CLI::IsMember(names, CLI::ignore_case).name(joined));
  return *this;
}

command_line& command_line::flag(const std::string& name, const std::string& help) {
  auto* o = app().add_flag("--" + name, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  declare({declared::flag, name, "", help, o});
  return *this;
}

command_line& command_line::positional(const std::string& value_name, const std::string& help, bool required) {
  auto* o = app().add_option(value_name, help)->type_name(value_name);
  declare({declared::positional, value_name, value_name, help, o});
  declared_.back().required = required;  // checked after --help, which needs none
  return *this;
}

command_line& command_line::env(const std::string& variable) {
  declared_.back().option->envname(variable);
  declared_.back().env = variable;
  return *this;
}

command_line& command_line::config_file() {
  auto* o = app().set_config("--config", "", "options from FILE");
  o->type_name("FILE");
  declare({declared::text, "config", "FILE",
           "options from FILE, one `name = value` a line (TOML or INI: an option's\n"
           "name without its dashes; a list [\"a\", \"b\"] for a repeatable one);\n"
           "the command line wins",
           nullptr});
  return *this;
}

command_line& command_line::footer(std::string text) {
  footer_ = std::move(text);
  return *this;
}

std::string command_line::help() const {
  std::ostringstream out;
  out << "usage: kgym " << name_ << " " << usage_ << "\n\n" << about_;
  if (!about_.empty() && about_.back() != '\n')
    out << "\n";
  std::string pending_heading = "options:";
  for (const auto& d : declared_) {
    if (d.kind == declared::heading) {
      pending_heading = d.help;
      continue;
    }
    if (!pending_heading.empty()) {
      out << "\n" << pending_heading << "\n";
      pending_heading.clear();
    }
    std::string head = "  " + (d.kind == declared::positional ? d.value_name : "--" + d.name) +
                       (d.kind == declared::text || d.kind == declared::repeated ? " " + d.value_name : "");
    std::string help = d.help;
    if (!d.env.empty())
      help += (help.find('\n') == std::string::npos ? " ($" : "\n($") + d.env + " when not given)";
    if (d.kind == declared::repeated)
      help += " (repeatable)";
    std::istringstream lines(help);
    std::string line;
    bool first = true;
    if (head.size() + 1 > name_column) {  // a long name: its description starts on the next line
      out << head << "\n";
      head.clear();
    }
    while (std::getline(lines, line)) {
      out << (first ? head + std::string(name_column - head.size(), ' ') : std::string(name_column, ' ')) << line
          << "\n";
      first = false;
    }
  }
  if (!footer_.empty())
    out << "\n" << footer_ << (footer_.back() == '\n' ? "" : "\n");
  return out.str();
}

std::optional<args> command_line::parse(const std::vector<std::string>& argv) {
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 takes them last first
  try {
    app().clear();
    app().parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see kgym " + name_ + " --help)");
  }
  std::map<std::string, std::vector<std::string>> values;
  std::set<std::string> flags;
  std::vector<std::string> positional;
  for (const auto& d : declared_) {
    if (!d.option || d.option->results().empty())  // given on the line, in --config or in the environment
      continue;
    if (d.kind == declared::flag) {
      if (d.option->as<bool>())
        flags.insert(d.name);
    } else if (d.kind == declared::positional) {
      for (const auto& r : d.option->results())
        positional.push_back(r);
    } else {
      values[d.name] = d.option->results();
    }
  }
  if (flags.count("help")) {
    std::cout << help();
    return std::nullopt;
  }
  for (const auto& d : declared_)
    if (d.required && d.option->results().empty())
      throw std::invalid_argument(d.value_name + " is required (see kgym " + name_ + " --help)");
  return args(std::move(values), std::move(flags), std::move(positional));
}

}  // namespace kgym::cli
