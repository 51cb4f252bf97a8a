// wanlab: one command, thin subcommands over the emulator and transport libraries.
#include <fmt/core.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "commands.hpp"
#include "options.hpp"

namespace {

struct Command {
  const char* name;
  int (*run)(wanlab::cli::Args);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"up", wanlab::cli::cmd_up, "up SCENARIO [--release auto|fq|nfqueue] [--name NAME]   build the emulated WAN"},
    {"down", wanlab::cli::cmd_down, "down [NAME | --all]                  remove a testbed, also after a crash"},
    {"run", wanlab::cli::cmd_run, "run SCENARIO [--release R] [--verify[=rtt|rate] [--verify-tolerance P%] [--verify-slack T]] -- CMD...   up, (verify,) run CMD, down; exits with CMD's code (1 if verify fails)"},
    {"verify", wanlab::cli::cmd_verify, "verify [SCENARIO | TESTBED] [--testbed NAME] [--rate] [--tolerance P%] [--slack T]   measure every DC pair's RTT (and goodput) against the configuration"},
    {"hosts", wanlab::cli::cmd_hosts, "hosts [--json] [--testbed NAME]       the emulated hosts"},
    {"exec", wanlab::cli::cmd_exec, "exec HOST [--testbed NAME] -- CMD...  run CMD on an emulated host"},
    {"set", wanlab::cli::cmd_set, "set DC DC [--one-way] [--rate R --delay T --jitter T --loss P% --queue Q --flow-rate R --reorder on|off]"},
    {"stats", wanlab::cli::cmd_stats, "stats [--json] [--watch] [--interval S]  per DC pair counters and rates"},
    {"status", wanlab::cli::cmd_status, "status                                testbeds up and their release path"},
    {"attach", wanlab::cli::cmd_attach, "attach DEV SCENARIO [--netns NAME | --pid PID] [--release R] [--name NAME]  the data plane on an existing interface"},
    {"demo", wanlab::cli::cmd_demo, "demo [SCENARIO]                       bring up a WAN, measure RTT and goodput per DC pair"},
    {"perf", wanlab::cli::cmd_perf, "perf server|client ...                multi-stream TCP goodput (iperf3-like)"},
    {"train", wanlab::cli::cmd_train, "train EXPERIMENT [--out DIR] [--schedule S --placement P --streams N --temporal-sharing on|off --pacing on|off --iterations N --scale X --prefill on|off] [--runtime auto|podman|sandbox|external] [--image IMG] [--simulate]  run training workers over an emulated WAN"},
    {"compare", wanlab::cli::cmd_compare, "compare RESULT...                     results.json of several runs side by side"},
    {"worker", wanlab::cli::cmd_worker, nullptr},
    {"prefill-worker", wanlab::cli::cmd_prefill_worker, nullptr},
    {"decode-sink", wanlab::cli::cmd_decode_sink, nullptr},
    {"daemon", wanlab::cli::cmd_daemon, nullptr},
};

void print_usage() {
  fmt::print("usage: wanlab COMMAND [ARGS]\n\ncommands:\n");
  for (const auto& command : kCommands)
    if (command.summary) fmt::print("  {}\n", command.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& command : kCommands) {
    if (std::strcmp(command.name, argv[1]) != 0) continue;
    try {
      return command.run(args);
    } catch (const wanlab::cli::HelpRequested&) {
      if (command.summary) fmt::print("usage: wanlab {}\n", command.summary);
      return 0;
    } catch (const wanlab::cli::UsageError& error) {
      fmt::print(stderr, "wanlab {}: {}\n", command.name, error.what());
      if (command.summary) fmt::print(stderr, "usage: wanlab {}\n", command.summary);
      return 2;
    } catch (const std::exception& error) {
      fmt::print(stderr, "wanlab {}: {}\n", command.name, error.what());
      return 1;
    }
  }
  fmt::print(stderr, "wanlab: unknown command \"{}\"\n", argv[1]);
  print_usage();
  return 2;
}
