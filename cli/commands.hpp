// The `wanlab` subcommands: one table (commands.cpp) gives each its operands,
// summary and options, from which main() parses argv, `--help` and the usage
// lines are made. `set`, `train` and `perf` take their options from the
// libraries' key tables (emulator::link_keys(), harness::experiment_options(),
// transport::perf::options()), so a key added there is an option here with no
// second list.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace wanlab::base {
class Options;
struct OptionSpec;
}  // namespace wanlab::base

namespace wanlab::cli {

using Args = std::span<const std::string>;

// The table parser is base's (wanlab/base/options.hpp), shared with the benchmarks.
using base::Options;
using base::OptionSpec;
using OptionSpecs = std::vector<OptionSpec>;

struct Command {
  std::string name;
  std::string operands;  // "DC DC", "[SCENARIO | TESTBED]", "-- CMD..."
  std::string summary;   // one line; internal commands say so
  OptionSpecs options;
  int (*run)(const Options& options) = nullptr;
  int (*run_args)(Args args) = nullptr;  // a command that parses its own arguments (perf)
  bool internal = false;                 // started by wanlab itself; left out of `wanlab --help`
};

// Every subcommand, in the order `wanlab --help` lists them.
const std::vector<Command>& commands();
const Command* find_command(const std::string& name);

// Parses `args` (after the command's name) against its options and runs it:
// --help prints help_text on stdout, exit 0; a bad command line is one line
// naming what is wrong, then the usage line, on stderr, exit 2; any other
// failure one line, exit 1.
int run_command(const Command& command, Args args);

// The command running now as typed after the binary, each argument quoted for
// a POSIX shell where it needs it: "wanlab train 'my exp.toml' --simulate".
// What a workload card records as the command that reproduces a run.
std::string command_line();

// "set DC DC [--testbed NAME] [--one-way] [--rate RATE] ...": every option.
std::string usage_line(const Command& command);
// The usage line, the summary and one line per option: what --help prints.
std::string help_text(const Command& command);

// `wanlab set`'s options that load or remove a schedule, apart from its link keys.
OptionSpecs schedule_options();

int cmd_up(const Options& options);
int cmd_down(const Options& options);
int cmd_run(const Options& options);
int cmd_verify(const Options& options);
int cmd_hosts(const Options& options);
int cmd_exec(const Options& options);
int cmd_launch(const Options& options);
int cmd_set(const Options& options);
int cmd_stats(const Options& options);
int cmd_status(const Options& options);
int cmd_attach(const Options& options);
int cmd_join(const Options& options);
int cmd_daemon(const Options& options);  // internal: releaser and timed events of one testbed
int cmd_perf(Args args);
int cmd_whatif(const Options& options);  // sweeps of the simulator
int cmd_plot(const Options& options);    // line plots from CSV
int cmd_demo(const Options& options);
int cmd_train(const Options& options);
int cmd_compare(const Options& options);
int cmd_plan(const Options& options);
int cmd_worker(const Options& options);          // internal: one emulated GPU of `train`
int cmd_prefill_worker(const Options& options);  // internal: BubbleTea prefill on one emulated GPU of `train`
int cmd_decode_sink(const Options& options);     // internal: BubbleTea decode host of `train`

}  // namespace wanlab::cli
