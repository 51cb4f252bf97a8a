// A small argv parser shared by the subcommands, driven by each command's
// table of options (commands.cpp): `--name value`, `--name=value`, boolean
// `--flag`, positionals, and everything after `--`. `-h`/`--help` ask for the
// usage; any other word starting with '-' before `--` is an unknown option,
// never a positional.
#pragma once

#include <concepts>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/verify.hpp"

namespace wanlab::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// -h or --help: print the command's usage and exit 0.
class HelpRequested : public std::exception {
 public:
  const char* what() const noexcept override { return "help requested"; }
};

// One option of a subcommand, as --help shows it: its name without "--", what
// it takes, and one line of help.
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

// "[--name NAME]", "[--quiet]", "[--verify[=rtt|rate]]".
std::string usage_of(const OptionSpec& option);

class Options {
 public:
  // Parses `args` against `specs`; an option not in them, a flag given a
  // value or a valued option without one is a UsageError naming it.
  Options(Args args, const OptionSpecs& specs);

  // A valued option's value, or the value given to an optional-valued one.
  std::optional<std::string> get(const std::string& name) const;
  // A valued option as a number in [min, max], through the one strict parser
  // (wanlab/base/parse.hpp); anything else is a UsageError naming the option.
  template <std::integral T>
  std::optional<T> integer(const std::string& name, T min, T max) const {
    const auto text = get(name);
    if (!text) return std::nullopt;
    try {
      return base::parse_integer<T>(*text, min, max);
    } catch (const base::ParseError& error) {
      throw UsageError("--" + name + ": " + error.what());
    }
  }
  std::optional<double> decimal(const std::string& name, double min, double max) const;
  bool flag(const std::string& name) const { return flags_set_.count(name) != 0; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after "--"
  // Valued options in the order given (for `set`).
  const std::vector<std::pair<std::string, std::string>>& ordered() const { return ordered_; }

 private:
  void take(const OptionSpec& spec, const std::optional<std::string>& value);

  std::map<std::string, std::string> values_;
  std::vector<std::pair<std::string, std::string>> ordered_;
  std::set<std::string> flags_set_;
  std::vector<std::string> positionals_;
  std::vector<std::string> rest_;
};

// --release auto|fq|nfqueue (default auto); a UsageError if it is none of them.
emulator::ReleaseChoice release_option(const Options& options);

// --<tolerance> P% and --<slack> T (each optional; defaults as VerifyOptions),
// a UsageError naming the option if malformed. `goodput` is left false.
emulator::VerifyOptions verify_options(const Options& options, const std::string& tolerance, const std::string& slack);

// --testbed NAME, checked against the testbed name rule (a UsageError if broken).
std::optional<std::string> testbed_option(const Options& options);
// A testbed name from the command line, checked the same way; `where` names
// the option or argument in the message.
std::string checked_testbed_name(const std::string& name, std::string_view where);

// --out DIR: opened (made where absent) and given to `check` (which throws
// base::FileError for an output that could not be written) before any work
// starts, so a bad one is a UsageError naming the option rather than a run's
// work thrown away.
std::optional<base::OutputDir> out_dir_option(const Options& options,
                                              const std::function<void(const base::OutputDir&)>& check = {});
// --out FILE: checked the same way (its directory exists; nothing, or a
// regular file, stands there); its path, for base::write_output_file.
std::optional<std::string> out_file_option(const Options& options);

}  // namespace wanlab::cli
