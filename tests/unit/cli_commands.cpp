// The `wanlab` command table (cli/commands.cpp) run as main() runs it: every
// subcommand's --help, the options `set` and `train` take from the libraries'
// key tables, and bad values of each kind: exit 2, one line naming the option.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/transport/perf.hpp"

namespace cli = wanlab::cli;

namespace {

struct Outcome {
  int status;
  std::string out;
  std::string err;
};

// The text written to file descriptor `fd` while `body` runs.
class Capture {
 public:
  explicit Capture(int fd) : fd_(fd), file_(std::tmpfile()), saved_(::dup(fd)) {
    std::fflush(nullptr);
    ::dup2(::fileno(file_), fd_);
  }
  std::string finish() {
    std::cout.flush();
    std::fflush(nullptr);
    ::dup2(saved_, fd_);
    ::close(saved_);
    std::string text;
    std::rewind(file_);
    for (int c; (c = std::fgetc(file_)) != EOF;) text.push_back(static_cast<char>(c));
    std::fclose(file_);
    return text;
  }

 private:
  int fd_;
  std::FILE* file_;
  int saved_;
};

Outcome run_wanlab(const std::vector<std::string>& argv) {
  const cli::Command* command = cli::find_command(argv.at(0));
  BOOST_TEST_REQUIRE(command != nullptr);
  Capture out(1), err(2);
  const int status = cli::run_command(*command, std::vector<std::string>(argv.begin() + 1, argv.end()));
  std::string err_text = err.finish();
  return {status, out.finish(), err_text};
}

std::string source(const std::string& path) {
  const char* dir = std::getenv("WANLAB_SOURCE_DIR");
  return std::string(dir ? dir : ".") + "/" + path;
}

// "--name" in `text`, not as the start of a longer name ("--verify" in "--verify-slack").
bool names_option(const std::string& text, const std::string& name) {
  const std::string word = "--" + name;
  for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const char next = at + word.size() < text.size() ? text[at + word.size()] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(next)) && next != '-') return true;
  }
  return false;
}

bool has_option(const cli::Command& command, std::string_view name) {
  for (const auto& option : command.options)
    if (option.name == name) return true;
  return false;
}

// One error line naming `option` and what it expects, then the usage line.
void check_bad_value(const std::vector<std::string>& argv, const std::string& option, const std::string& expected) {
  BOOST_TEST_CONTEXT(argv.at(0) << " " << option) {
    const Outcome result = run_wanlab(argv);
    BOOST_TEST(result.status == 2);
    const auto newline = result.err.find('\n');
    const std::string first = result.err.substr(0, newline);
    BOOST_TEST(first.starts_with("wanlab " + argv[0] + ": "), result.err);
    BOOST_TEST(first.find(option + ": expected " + expected) != std::string::npos, result.err);
    BOOST_TEST(result.err.substr(newline + 1).starts_with("usage: wanlab " + argv[0]), result.err);
    BOOST_TEST(result.err.find('\n', newline + 1) == result.err.size() - 1, result.err);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_subcommand_has_help_naming_every_option) {
  for (const cli::Command& command : cli::commands()) {
    BOOST_TEST_CONTEXT(command.name) {
      const Outcome help = run_wanlab({command.name, "--help"});
      BOOST_TEST(help.status == 0);
      BOOST_TEST(help.out.starts_with("usage: wanlab " + command.name), help.out);
      BOOST_TEST(help.err.empty(), help.err);
      const std::string usage = cli::usage_line(command);
      for (const auto& option : command.options) {
        BOOST_TEST(names_option(help.out, option.name), option.name);
        BOOST_TEST(usage.find("[--" + option.name) != std::string::npos, option.name);
      }
    }
  }
  BOOST_TEST(run_wanlab({"set", "-h"}).status == 0);
}

BOOST_AUTO_TEST_CASE(set_takes_every_link_key_and_train_every_experiment_option) {
  const cli::Command& set = *cli::find_command("set");
  for (const auto& key : wanlab::emulator::link_keys())
    BOOST_TEST(has_option(set, wanlab::emulator::link_option_name(key.name).substr(2)), key.name);
  const cli::Command& train = *cli::find_command("train");
  for (const auto& option : wanlab::harness::experiment_options())
    BOOST_TEST(has_option(train, option.name), option.name);

  const std::vector<std::string> args{"east", "west", "--ge-r", "1%", "--ge-bad-loss=50%", "--ge-good-loss", "0.1%"};
  const cli::Options options(args, set.options);
  BOOST_TEST(options.ordered().size() == 3u);
  BOOST_TEST(options.get("ge-r").value() == "1%");
  BOOST_TEST(options.get("ge-bad-loss").value() == "50%");
}

BOOST_AUTO_TEST_CASE(perf_takes_its_options_from_the_transport_table) {
  const cli::Command& perf = *cli::find_command("perf");
  const std::string usage = cli::usage_line(perf);
  const std::string help = wanlab::transport::perf::usage();
  for (const auto& option : wanlab::transport::perf::options()) {
    BOOST_TEST(has_option(perf, option.name), option.name);
    BOOST_TEST(names_option(help, option.name), option.name);
    if (option.short_name)
      BOOST_TEST(help.find(std::string{'-', option.short_name} + ", --" + option.name) != std::string::npos,
                 option.name);
  }
  const Outcome bad = run_wanlab({"perf", "client", "h", "-P", "x"});
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.err == "wanlab perf: -P: expected a whole number from 1 to 64, got \"x\"\n", bad.err);
}

BOOST_AUTO_TEST_CASE(train_takes_reorder_dcs_as_the_docs_show) {
  const std::string experiment = source("scenarios/experiments/atlas-order-3dc.toml");
  const Outcome result =
      run_wanlab({"train", experiment, "--reorder-dcs", "off", "--simulate", "--iterations", "1", "--quiet"});
  BOOST_TEST(result.status == 0, result.err);
  BOOST_TEST(result.out.find("1 iterations") != std::string::npos, result.out);
  check_bad_value({"train", experiment, "--reorder-dcs", "sometimes", "--simulate"}, "--reorder-dcs", "on or off");
}

BOOST_AUTO_TEST_CASE(bad_values_name_their_option_and_exit_2) {
  const std::string scenario = source("scenarios/ci.toml");
  const std::string experiment = source("scenarios/experiments/ci-2dc.toml");
  // Link keys, through the scenario file's own parsers.
  check_bad_value({"set", "east", "west", "--ge-r", "x"}, "--ge-r", "a percentage");
  check_bad_value({"set", "east", "west", "--rate", "fast"}, "--rate", "a rate");
  check_bad_value({"set", "east", "west", "--delay", "1"}, "--delay", "a time");
  check_bad_value({"set", "east", "west", "--queue", "lots"}, "--queue", "a queue limit");
  check_bad_value({"set", "east", "west", "--loss-model", "random"}, "--loss-model", "\"bernoulli\"");
  check_bad_value({"set", "east", "west", "--reorder", "maybe"}, "--reorder", "on or off");
  // Experiment options, through the experiment's.
  check_bad_value({"train", experiment, "--streams", "8x"}, "--streams", "a whole number from 1 to 64");
  check_bad_value({"train", experiment, "--scale", "2"}, "--scale", "a number");
  check_bad_value({"train", experiment, "--pipeline", "zigzag"}, "--pipeline",
                  "gpipe, 1f1b, atlas, diloco or streaming-diloco");
  // The old name of --pipeline still works, and says it is the old name.
  check_bad_value({"train", experiment, "--schedule", "zigzag"}, "--schedule",
                  "gpipe, 1f1b, atlas, diloco or streaming-diloco");
  const Outcome old_name =
      run_wanlab({"train", experiment, "--schedule", "gpipe", "--simulate", "--iterations", "1", "--quiet"});
  BOOST_TEST(old_name.status == 0, old_name.err);
  BOOST_TEST(old_name.err.find("--schedule is the old name of --pipeline") != std::string::npos, old_name.err);
  // The commands' own numbers, times, percentages and choices.
  check_bad_value({"train", experiment, "--timeout", "soon"}, "--timeout", "a whole number");
  check_bad_value({"train", experiment, "--runtime", "docker"}, "--runtime",
                  "auto, podman, sandbox, external or slurm");
  check_bad_value({"train", experiment, "--image=--privileged"}, "--image", "an image reference");
  check_bad_value({"launch", "--runtime", "podman", "--image=-v/:/host", "--", "true"}, "--image",
                  "an image reference");
  check_bad_value({"train", experiment, "--wan-start", "soon", "--simulate"}, "--wan-start", "a time");
  check_bad_value({"train", experiment, "--wan-start", "400000000s", "--simulate"}, "--wan-start",
                  "a time from 0s to 31536000s");
  // A real run's testbed starts at 0: refused before anything is brought up.
  const Outcome real_late = run_wanlab({"train", experiment, "--wan-start", "9s"});
  BOOST_TEST(real_late.status == 2);
  BOOST_TEST(real_late.err.find("wan_start 9s: a real run starts at its testbed's time 0") != std::string::npos,
             real_late.err);
  // Checked before the run (nothing is brought up): ci-2dc has pp 2 x dp 2 workers.
  check_bad_value({"train", experiment, "--ranks", "0,4"}, "--ranks", "auto, all, representative or worker ids");
  check_bad_value({"train", experiment, "--ranks", "everyone"}, "--ranks", "auto, all, representative or worker ids");
  check_bad_value({"plan", experiment, "--jobs", "0"}, "--jobs", "a whole number from 1 to 1024");
  check_bad_value({"plan", experiment, "--out="}, "--out", "a directory");
  check_bad_value({"stats", "--interval", "x"}, "--interval", "a number from 0.01 to 86400");
  check_bad_value({"demo", scenario, "--seconds", "0"}, "--seconds", "a number");
  check_bad_value({"attach", "veth0", scenario, "--queue-num", "70000"}, "--queue-num", "a whole number");
  check_bad_value({"attach", "veth0", scenario, "--pid", "1x"}, "--pid", "a whole number");
  check_bad_value({"verify", "--tolerance", "10"}, "--tolerance", "");
  check_bad_value({"run", scenario, "--verify", "--verify-slack", "1abc", "--", "true"}, "--verify-slack", "");
  check_bad_value({"up", scenario, "--release", "fast"}, "--release", "auto, fq or nfqueue");
  check_bad_value({"daemon", "--ready-fd", "-1"}, "--ready-fd", "a whole number");
  check_bad_value({"worker", "--control", "/nonexistent", "--id", "x"}, "--id", "a whole number");
}

BOOST_AUTO_TEST_CASE(unknown_options_are_one_line_and_exit_2) {
  struct Case {
    std::vector<std::string> argv;
    std::string option;
  };
  for (const Case& c : {Case{{"set", "east", "west", "--ge-x", "1%"}, "--ge-x"},
                        Case{{"train", "e.toml", "--reorder", "off"}, "--reorder"}, Case{{"down", "-x"}, "-x"}}) {
    const Outcome result = run_wanlab(c.argv);
    BOOST_TEST(result.status == 2);
    BOOST_TEST(result.err.starts_with("wanlab " + c.argv[0] + ": unknown option \"" + c.option + "\"\n"), result.err);
  }
}

BOOST_AUTO_TEST_CASE(set_checks_a_schedule_before_looking_for_the_testbed) {
  struct Case {
    std::vector<std::string> argv;
    std::string expected;
  };
  const Case usage[] = {
      {{"set", "east", "west", "--period", "1s"}, "--period: only with --schedule"},
      {{"set", "east", "west", "--resolution", "1ms"}, "--resolution: only with --mahimahi"},
      {{"set", "east", "west", "--schedule", "a.csv", "--mahimahi", "b.up"},
       "--schedule and --mahimahi: give one of them"},
      {{"set", "east", "west", "--schedule", "a.csv", "--no-schedule"}, "--no-schedule: not with a schedule to load"},
      {{"set", "east", "west", "--schedule", "a.csv", "--period", "0s"}, "--period: must be greater than 0"},
      {{"set", "east", "west", "--mahimahi", "b.up", "--resolution", "soon"}, "--resolution: expected a time"},
  };
  for (const Case& c : usage) {
    BOOST_TEST_CONTEXT(c.expected) {
      const Outcome result = run_wanlab(c.argv);
      BOOST_TEST(result.status == 2);
      BOOST_TEST(result.err.find(c.expected) != std::string::npos, result.err);
    }
  }
  // A bad trace is one line naming its file and line, before any testbed is
  // looked for (there is none called trnone); so is one that would never let
  // the link send as the data plane holds it (a share that rounds to 100%).
  const std::pair<std::string, std::string> traces[] = {
      {"time,rate\n0s,fast\n", ":2: rate: expected a rate like \"100mbit\", got \"fast\"\n"},
      {"time,rate,share\n0s,100mbit,99.9999999999%\n",
       ":2: the link never sends: every step pauses it (this one: a share of 99.9999999999% is 100% as the data plane "
       "holds it, in steps of 2^-32)\n"},
  };
  for (const auto& [text, message] : traces) {
    char path[] = "/tmp/wanlab-cli-trace-XXXXXX";
    const int fd = ::mkstemp(path);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    const Outcome result = run_wanlab({"set", "east", "west", "--testbed", "trnone", "--schedule", path});
    ::unlink(path);
    BOOST_TEST(result.status == 1);
    BOOST_TEST(result.err == "wanlab set: " + std::string(path) + message, result.err);
  }
}

BOOST_AUTO_TEST_CASE(whatif_runs_a_shipped_sweep_and_plot_names_its_options) {
  const Outcome sweep = run_wanlab({"whatif", source("scenarios/sweeps/latency-2dc.toml"), "--quiet"});
  BOOST_TEST(sweep.status == 0, sweep.err);
  BOOST_TEST(sweep.out.starts_with("point  schedule  testbed.link[0].delay  iteration_s"), sweep.out);
  BOOST_TEST(std::count(sweep.out.begin(), sweep.out.end(), '\n') == 19);  // the header and 18 points
  const Outcome bad = run_wanlab({"whatif", source("scenarios/sweeps/latency-2dc.toml"), "extra.toml"});
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.err.starts_with("wanlab whatif: expected one sweep file\n"), bad.err);

  const std::string csv = source("bench/results/bubbletea/bubbletea-20261122/load.csv");
  // Never /dev/null as an output here: a test that wrote over it once left
  // the machine a regular file there. Errors come before anything is written.
  const std::string svg =
      std::filesystem::temp_directory_path() / ("wanlab-plot-" + std::to_string(::getpid()) + ".svg");
  check_bad_value({"plot", csv, "--x", "rate_per_s", "--y", "ttft_p50_s", "--ymin", "low", "--out", svg}, "--ymin",
                  "a number");
  const Outcome two = run_wanlab({"plot", csv, "--x", "rate_per_s", "--y", "ttft_p50_s,ttft_p99_s", "--out", svg});
  BOOST_TEST(two.status == 0, two.err);
  std::ifstream drawn(svg);
  const std::string text((std::istreambuf_iterator<char>(drawn)), std::istreambuf_iterator<char>());
  BOOST_TEST(text.find(">ttft_p50_s</text>") != std::string::npos);
  BOOST_TEST(text.find(">ttft_p99_s</text>") != std::string::npos);
  std::filesystem::remove(svg);
  const Outcome no_x = run_wanlab({"plot", csv, "--y", "ttft_p50_s", "--out", svg});
  BOOST_TEST(no_x.status == 2);
  BOOST_TEST(no_x.err.starts_with("wanlab plot: --x: required: the x column\n"), no_x.err);
  const Outcome no_column = run_wanlab({"plot", csv, "--x", "rate", "--y", "ttft_p50_s", "--out", svg});
  BOOST_TEST(no_column.status == 1);
  BOOST_TEST(no_column.err.starts_with("wanlab plot: " + csv + ": no column \"rate\""), no_column.err);
  BOOST_TEST(!std::filesystem::exists(svg));
}

BOOST_AUTO_TEST_CASE(compare_prints_one_format_and_names_what_it_cannot_read) {
  const std::string run = source("bench/results/bubbletea/bubbletea-20261126/3dc-atlas+bt");
  const Outcome csv = run_wanlab({"compare", "--csv", run, run + "/results.json"});
  BOOST_TEST(csv.status == 0, csv.err);
  BOOST_TEST(csv.out.starts_with("label,experiment,runtime,"), csv.out);
  BOOST_TEST(std::count(csv.out.begin(), csv.out.end(), '\n') == 3);
  const Outcome markdown = run_wanlab({"compare", "--markdown", run});
  BOOST_TEST(markdown.status == 0, markdown.err);
  BOOST_TEST(markdown.out.starts_with("| | "), markdown.out);
  const Outcome ttfts = run_wanlab({"compare", "--ttfts", run});
  BOOST_TEST(ttfts.status == 0, ttfts.err);
  BOOST_TEST(ttfts.out.starts_with("percentile,ttft_s\n"), ttfts.out);

  struct Case {
    std::vector<std::string> argv;
    std::string expected;
  };
  for (const Case& c : {Case{{"compare", "--csv", "--markdown", run}, "--csv: not with --markdown"},
                        Case{{"compare", "--ttfts", run, run}, "--ttfts: expected one result, got 2"},
                        Case{{"compare", "--csv"}, "expected one or more result directories"},
                        Case{{"compare", "--tsv", run}, "unknown option \"--tsv\""}}) {
    const Outcome result = run_wanlab(c.argv);
    BOOST_TEST(result.status == 2);
    BOOST_TEST(result.err.starts_with("wanlab compare: " + c.expected), result.err);
  }
  // A directory with no results.json: one line naming the file, exit 1.
  const std::string empty = source("scenarios");
  const Outcome missing = run_wanlab({"compare", "--csv", empty});
  BOOST_TEST(missing.status == 1);
  BOOST_TEST(missing.err.starts_with("wanlab compare: " + empty + "/results.json: cannot read results: "), missing.err);
  BOOST_TEST(std::count(missing.err.begin(), missing.err.end(), '\n') == 1, missing.err);
  BOOST_TEST(missing.out.empty(), missing.out);
}

// --kept-up-only: a real run whose emulation fell behind is left out, named on
// stderr with its verdict (the health bench's committed runs: idle, one hog).
BOOST_AUTO_TEST_CASE(compare_kept_up_only_leaves_out_runs_that_fell_behind) {
  const std::string kept = source("bench/results/harness/health-20261127-091741/hogs-0");
  const std::string behind = source("bench/results/harness/health-20261127-091741/hogs-1");
  const Outcome all = run_wanlab({"compare", "--csv", kept, behind});
  BOOST_TEST(all.status == 0, all.err);
  BOOST_TEST(std::count(all.out.begin(), all.out.end(), '\n') == 3, all.out);
  const Outcome only = run_wanlab({"compare", "--csv", "--kept-up-only", kept, behind});
  BOOST_TEST(only.status == 0, only.err);
  BOOST_TEST(std::count(only.out.begin(), only.out.end(), '\n') == 2, only.out);
  BOOST_TEST(only.out.find(kept + ",") != std::string::npos, only.out);
  BOOST_TEST(only.out.find(behind) == std::string::npos, only.out);
  BOOST_TEST(only.err.starts_with("wanlab compare: left out " + behind + ": emulation fell behind: "), only.err);
  BOOST_TEST(std::count(only.err.begin(), only.err.end(), '\n') == 1, only.err);
  const Outcome table = run_wanlab({"compare", kept, behind});
  BOOST_TEST(table.out.find("FELL BEHIND") != std::string::npos, table.out);
}

// `train --runtime slurm` outside what it needs says so in one line, before
// anything starts: no WAN named, a WAN not up here, a scenario on one box, a
// scale below 1. (The run itself: multihost.slurm.)
BOOST_AUTO_TEST_CASE(train_across_machines_says_what_it_lacks) {
  ::unsetenv("WANLAB_TESTBED");
  const std::string across = source("tests/data/multihost/train-3.toml");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"train", across, "--runtime", "slurm", "--quiet"},
       "wanlab train: --runtime slurm: which WAN? WANLAB_TESTBED is not set"},
      {{"train", source("scenarios/experiments/ci-2dc.toml"), "--runtime", "slurm", "--quiet"},
       "ci.toml is not a scenario over machines"},
      {{"train", across, "--runtime", "slurm", "--scale", "0.5", "--quiet"},
       "wanlab train: --runtime slurm: scale 0.5: across machines the run goes over the WAN `wanlab join` holds"},
  };
  for (const auto& [argv, expected] : cases) {
    const Outcome outcome = run_wanlab(argv);
    BOOST_TEST(outcome.status == 1);
    BOOST_TEST(outcome.err.find(expected) != std::string::npos, outcome.err);
    BOOST_TEST(std::count(outcome.err.begin(), outcome.err.end(), '\n') == 1, outcome.err);
  }
  ::setenv("WANLAB_TESTBED", "nope", 1);
  const Outcome absent = run_wanlab({"train", across, "--runtime", "slurm", "--quiet"});
  ::unsetenv("WANLAB_TESTBED");
  BOOST_TEST(absent.status == 1);
  BOOST_TEST(absent.err.find("testbed \"nope\" (WANLAB_TESTBED) is not up on this node: ") != std::string::npos,
             absent.err);
}
