// The benchmarks' command lines and their main: each bench declares its
// options as a table (base/options.hpp, the parser `wanlab` uses), from which
// --help and the usage line are made; a bad command line is one line naming
// the option and exit 2, as in the CLI.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/base/options.hpp"

namespace wanlab::bench {

using base::Options;
using base::OptionSpec;
using base::OptionSpecs;
using base::UsageError;

// A benchmark as its --help shows it.
struct Program {
  std::string name;      // "wanlab_soak_bench"
  std::string summary;   // what it measures, one line
  OptionSpecs options;   // its table
  std::string operands;  // after the options in the usage line ("" for none)
};

OptionSpec valued(std::string name, std::string metavar, std::string help);
OptionSpec flag(std::string name, std::string help);

// argv read against program.options, then run(options), under the one
// SIGINT/SIGTERM/SIGHUP guard (base/interrupts.hpp): a signal ends the run at
// its next base::check_interrupted(), and what it made (testbeds, processes,
// work directories) goes with the objects that own it. --help prints the
// usage on stdout, exit 0; a base::UsageError (from parsing or from `run`
// reading its options) is "NAME: what" and the usage line on stderr, exit 2;
// a signal "NAME: interrupted by signal N (...)", exit 128 + N; any other
// failure one line "NAME: what", exit 1.
int main_of(const Program& program, const std::function<int(const Options&)>& run, int argc, char** argv);

// "[--a A] [--b]" and the options' help, as `wanlab COMMAND --help` shows them.
std::string usage_line(const Program& program);
std::string help_text(const Program& program);

// --wanlab PATH, made absolute, or the `wanlab` built beside this benchmark
// (BUILD/cli/wanlab for BUILD/bench/NAME); a UsageError unless it is executable.
std::string wanlab_option(const Options& options);

// "a,b,,c" -> {"a", "b", "", "c"}: a list option's values, and a CSV line's fields.
std::vector<std::string> split_commas(const std::string& text);

// A list option "--NAME a,b,c", each item through `parse` (whose
// std::invalid_argument, std::out_of_range or base::ParseError becomes a
// UsageError naming the option and the item); nothing if absent.
template <typename Parse>
auto list_option(const Options& options, const std::string& name, Parse parse)
    -> std::optional<std::vector<decltype(parse(std::string()))>> {
  const auto text = options.get(name);
  if (!text) return std::nullopt;
  std::vector<decltype(parse(std::string()))> values;
  for (const std::string& item : split_commas(*text)) {
    try {
      values.push_back(parse(item));
    } catch (const std::logic_error& error) {  // invalid_argument, out_of_range, ParseError
      throw UsageError("--" + name + ": " + base::quoted(item) + ": " + error.what());
    }
  }
  return values;
}

}  // namespace wanlab::bench
