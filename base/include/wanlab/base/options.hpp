// A command line read against a table of options: `--name value`,
// `--name=value`, boolean `--flag`, `--flag[=value]`, positionals, and
// everything after `--`. `-h`/`--help` ask for the usage; any other word
// starting with '-' before `--` is an unknown option, never a positional.
// Every mistake is a UsageError naming the option, which the program prints
// on one line and exits 2 for. Used by `wanlab` (cli/) and the benchmarks.
#pragma once

#include <concepts>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"

namespace wanlab::base {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// -h or --help: the program prints its usage and exits 0.
class HelpRequested : public std::exception {
 public:
  const char* what() const noexcept override { return "help requested"; }
};

/// One option, as --help shows it: its name without "--", what it takes, and
/// one line of help.
struct OptionSpec {
  enum class Takes {
    nothing,         // a flag: --quiet
    value,           // --name NAME or --name=NAME
    optional_value,  // a flag that may carry a value after '=' only: --verify[=rate]
  };
  std::string name;
  Takes takes = Takes::value;
  std::string metavar;  // "NAME", "on|off"; empty for a flag
  std::string help;
};
using OptionSpecs = std::vector<OptionSpec>;

/// "[--name NAME]", "[--quiet]", "[--verify[=rtt|rate]]".
std::string usage_of(const OptionSpec& option);
/// What --help lists under "options:": a line per option, "  --name NAME" in a
/// column of 34 and its help beside it (below it where the name is longer).
std::string options_help(const OptionSpecs& options);

class Options {
 public:
  /// Parses `args` against `specs`; an option not in them, a flag given a
  /// value or a valued option without one is a UsageError naming it.
  Options(std::span<const std::string> args, const OptionSpecs& specs);

  /// A valued option's value, or the value given to an optional-valued one.
  std::optional<std::string> get(const std::string& name) const;
  /// A valued option as a number in [min, max], through the one strict parser
  /// (parse.hpp); anything else is a UsageError naming the option.
  template <std::integral T>
  std::optional<T> integer(const std::string& name, T min, T max) const {
    const auto text = get(name);
    if (!text) return std::nullopt;
    try {
      return parse_integer<T>(*text, min, max);
    } catch (const ParseError& error) {
      throw UsageError("--" + name + ": " + error.what());
    }
  }
  std::optional<double> decimal(const std::string& name, double min, double max) const;
  bool flag(const std::string& name) const { return flags_set_.count(name) != 0; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after "--"
  /// Valued options in the order given (for `wanlab set`).
  const std::vector<std::pair<std::string, std::string>>& ordered() const { return ordered_; }

 private:
  void take(const OptionSpec& spec, const std::optional<std::string>& value);

  std::map<std::string, std::string> values_;
  std::vector<std::pair<std::string, std::string>> ordered_;
  std::set<std::string> flags_set_;
  std::vector<std::string> positionals_;
  std::vector<std::string> rest_;
};

/// A valued option through `parse`, whose std::invalid_argument (a unit
/// parser's, a list's) becomes a UsageError naming the option.
template <typename Parse>
auto parsed_option(const Options& options, const std::string& name, Parse parse)
    -> std::optional<decltype(parse(std::string()))> {
  const auto text = options.get(name);
  if (!text) return std::nullopt;
  try {
    return parse(*text);
  } catch (const std::invalid_argument& error) {
    throw UsageError("--" + name + ": " + error.what());
  }
}

/// --NAME FILE, a file to write once the work is done: checked now
/// (check_output_file: its directory exists; nothing, or a regular file,
/// stands there), so a bad one is a UsageError naming the option rather than
/// the work thrown away. Its path, for write_output_file.
std::optional<std::string> output_file_option(const Options& options, const std::string& name);
/// --NAME DIR: opened (made where absent) and given to `check` (which throws
/// FileError for an output that could not be written) before any work starts.
std::optional<OutputDir> output_dir_option(const Options& options, const std::string& name,
                                           const std::function<void(const OutputDir&)>& check = {});

}  // namespace wanlab::base
