// The soak benchmark: a three-DC testbed under mixed load
// for a long time — `wanlab perf` streams on every directed DC pair all the
// way through, a `wanlab set` change every second, processes started and
// killed on the emulated hosts — sampling the releaser daemon's CPU, memory
// and descriptors, the data plane's drops by reason (each checked against the
// configuration in force when it happened) and the kernel's own drops; then
// `wanlab down` and a search for anything the testbed left behind.
//
// Usage (root): wanlab_soak_bench --scenario FILE [--wanlab PATH] [--name NAME]
//               [--minutes N | --seconds N] [--sample-seconds N] [--warmup-seconds N]
//               [--markdown FILE] [--csv FILE] [--command TEXT]
//
// Everything runs through the real `wanlab` binary (up, set, exec, perf,
// down); the counters are read from /proc and from the testbed's pinned maps.
// This file is the command line; the soak's parts are in soak/: the load it
// drives, what it samples, how drops are judged, the verdicts and the report.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "soak/config.hpp"
#include "soak/soak.hpp"

namespace base = wanlab::base;
using namespace wanlab::bench;
using wanlab::bench::soak::Config;

namespace {

const Program kProgram{
    "wanlab_soak_bench",
    "a three-DC testbed under mixed load for minutes: the releaser's CPU and memory, drops by reason, leftovers "
    "after down (root; the minutes asked for plus about one)",
    {valued("scenario", "FILE", "a three-DC scenario with two hosts a DC (scenarios/three-dc.toml); required"),
     valued("wanlab", "PATH", "the wanlab binary (default: the one built beside this benchmark)"),
     valued("name", "NAME", "the testbed's name (default soak)"),
     valued("minutes", "N", "how long to soak, 0.5 to 1440 (default 10)"),
     valued("seconds", "N", "how long to soak in seconds, 20 to 86400, instead"),
     valued("sample-seconds", "N", "a row every N seconds, 1 to 600 (default 10)"),
     valued("warmup-seconds", "N", "memory is judged from N seconds on, 0 to 3600 (default 60; at most half the soak)"),
     valued("markdown", "FILE", "write the report there as markdown"), valued("csv", "FILE", "write every row there"),
     valued("command", "TEXT", "the command the markdown says made it (default bench/run-soak-bench.sh)")},
    ""};

Config config_of(const Options& options) {
  Config config;
  config.scenario = options.get("scenario").value_or("");
  if (config.scenario.empty())
    throw UsageError("--scenario: a three-DC scenario file is needed (scenarios/three-dc.toml)");
  config.scenario = std::filesystem::absolute(config.scenario).string();
  config.wanlab = wanlab_option(options);
  config.name = options.get("name").value_or(config.name);
  if (const auto minutes = options.decimal("minutes", 0.5, 24 * 60)) config.seconds = 60 * *minutes;
  config.seconds = options.decimal("seconds", 20, 24 * 3600).value_or(config.seconds);
  config.sample_seconds = static_cast<int>(options.decimal("sample-seconds", 1, 600).value_or(config.sample_seconds));
  config.warmup_seconds = options.decimal("warmup-seconds", 0, 3600).value_or(config.warmup_seconds);
  config.markdown = base::output_file_option(options, "markdown").value_or("");
  config.csv = base::output_file_option(options, "csv").value_or("");
  config.command = options.get("command").value_or(config.command);
  // The warm-up must leave rows to judge.
  config.warmup_seconds = std::min(config.warmup_seconds, config.seconds / 2);
  return config;
}

int run(const Options& options) {
  const Config config = config_of(options);
  if (::geteuid() != 0) throw std::runtime_error("needs root (namespaces, tc, iptables)");
  const WorkDir work("wanlab-soak");
  wanlab::bench::soak::Soak soak(config, work.path);
  return soak.run();
}

}  // namespace

int main(int argc, char** argv) { return main_of(kProgram, run, argc, argv); }
