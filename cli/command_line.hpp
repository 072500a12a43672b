// One subcommand's command line: its options are declared once, here, with their help; CLI11
// parses them (types and choices checked before the command runs, --name=value, unknown options
// refused, a `--config FILE` of NAME = VALUE lines where the command offers one, environment
// fallbacks), and the help is generated from the same declarations. The parsed values come
// back as `args`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "messages/enum_names.hpp"

namespace CLI {
class App;
}

namespace kgym::cli {

class command_line {
 public:
  // `usage`: what follows "usage: kgym NAME"; `about`: what the command does, in paragraphs.
  command_line(std::string name, std::string usage, std::string about);
  ~command_line();
  command_line(command_line&&) noexcept;

  // A heading in the help before the options declared next ("cluster:").
  command_line& section(std::string title);
  // --name VALUE, at most once (a repeat replaces it).
  command_line& text(const std::string& name, const std::string& value_name, const std::string& help);
  // --name VALUE, any number of times (args::all has them in order).
  command_line& repeated(const std::string& name, const std::string& value_name, const std::string& help);
  // A whole number from 0 to 2^64-1, exactly (seeds), refused otherwise.
  command_line& whole(const std::string& name, const std::string& value_name, const std::string& help);
  // A real number.
  command_line& number(const std::string& name, const std::string& value_name, const std::string& help);
  // One of `names` (any case).
  command_line& one_of(const std::string& name, const std::vector<std::string>& names, const std::string& help);
  // One of the schema enum E's values by name (any case): "--device cpu|cuda".
  template <class E>
  command_line& choice(const std::string& name, const std::string& help) {
    return one_of(name, enum_names<E>(), help);
  }
  // --name, no value.
  command_line& flag(const std::string& name, const std::string& help);
  // A value without a name, in order ("RUN_DIR"); optional unless `required`.
  command_line& positional(const std::string& value_name, const std::string& help, bool required = false);
  // The option declared last also reads environment variable `variable` when not given.
  command_line& env(const std::string& variable);
  // `--config FILE`: options from a file, one `name = value` a line (TOML or INI; the names
  // without their dashes, a list for a repeated option), under what the command line gives.
  command_line& config_file();
  // Text after the options.
  command_line& footer(std::string text);

  // The parsed values; none when --help was asked (the help is then printed to stdout). A
  // command line CLI11 refuses throws std::invalid_argument saying what is wrong, and where
  // the help is.
  std::optional<args> parse(const std::vector<std::string>& argv);
  std::string help() const;

 private:
  struct declared;
  CLI::App& app();
  void declare(declared d);
  std::string name_, usage_, about_, footer_;
  std::vector<declared> declared_;
  std::unique_ptr<CLI::App> app_;
};

}  // namespace kgym::cli
