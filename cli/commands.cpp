// The table of `wanlab` subcommands and their options; usage lines and --help
// are made from it, never written by hand.
#include "commands.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <exception>

#include "options.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/transport/perf.hpp"

namespace wanlab::cli {

namespace {

using Takes = OptionSpec::Takes;

OptionSpec flag(std::string name, std::string help) { return {std::move(name), Takes::nothing, "", std::move(help)}; }
OptionSpec valued(std::string name, std::string metavar, std::string help) {
  return {std::move(name), Takes::value, std::move(metavar), std::move(help)};
}

const OptionSpec kTestbed = valued("testbed", "NAME", "the testbed (default: $WANLAB_TESTBED, else the only one up)");
const OptionSpec kRelease =
    valued("release", "auto|fq|nfqueue", "the release path (default auto: fq where the kernel has sch_fq)");
const OptionSpec kName = valued("name", "NAME", "the testbed's name (default: the scenario's)");
const OptionSpec kQuiet = flag("quiet", "no progress lines");
const OptionSpec kJson = flag("json", "one JSON document instead of a table");
const OptionSpec kControl = valued("control", "SOCKET", "the coordinator's Unix socket");
const OptionSpec kId = valued("id", "N", "this process's number in the plan");

// `wanlab set`: --one-way and every link key of the scenario vocabulary.
OptionSpecs set_options() {
  OptionSpecs options{kTestbed, flag("one-way", "change only the direction DC -> DC (default: both)")};
  for (const emulator::LinkKey& key : emulator::link_keys())
    options.push_back(valued(emulator::link_option_name(key.name).substr(2), std::string(key.metavar),
                             key.is_bool ? "on or off" : std::string(key.expected)));
  for (OptionSpec option : schedule_options()) options.push_back(std::move(option));
  return options;
}

// `wanlab perf`: the transport's table, each name once (--port is the
// server's and the client's). perf parses its own arguments (short options,
// server|client); this is its usage line.
OptionSpecs perf_options() {
  OptionSpecs options;
  for (const transport::perf::Option& option : transport::perf::options()) {
    const bool listed =
        std::any_of(options.begin(), options.end(), [&](const OptionSpec& o) { return o.name == option.name; });
    if (listed) continue;
    options.push_back(option.metavar.empty() ? flag(option.name, option.help)
                                             : valued(option.name, option.metavar, option.help));
  }
  return options;
}

// `wanlab train`: every experiment override, then the run's own options.
OptionSpecs train_options() {
  OptionSpecs options{
      valued("out", "DIR",
             "write results.json, trace.json, timeline.svg, card.yaml and ranks/ (per-rank traces) there"),
      valued("ranks", "auto|all|representative|ID,...",
             "the workers --out's trace, timeline rows and ranks/ show (default auto: all, but for a simulated plan of "
             "over 64 workers replica 0 and the last to finish of every stage)")};
  for (const harness::ExperimentOption& option : harness::experiment_options())
    options.push_back(valued(std::string(option.name), std::string(option.metavar), std::string(option.help)));
  for (OptionSpec option :
       {valued("runtime", "auto|podman|sandbox|external|slurm",
               "where workers run (default auto: podman, else the sandbox; slurm: across the machines of a Slurm "
               "job, over the WAN `wanlab join` holds)"),
        valued("image", "IMG", "the worker image (default: the one built for this binary)"),
        kRelease,
        valued("timeout", "SECONDS", "fail an iteration that takes longer (1 to 86400)"),
        {"idle-poll", Takes::optional_value, "auto|on|off",
         "keep idle CPUs from halting during a real run, so that timers on a VM wake sooner: a SCHED_IDLE thread per "
         "CPU spins in idle time (default auto: while the run keeps the CPUs under 40% busy; bare: on; "
         "docs/RUNTIME.md#idle-polling)"},
        kQuiet,
        flag("simulate", "the planner's simulation instead of the emulated WAN")})
    options.push_back(std::move(option));
  return options;
}

std::vector<Command> make_commands() {
  const OptionSpec tolerance_help = valued("tolerance", "P%", "how far off a pair may be (default 10%)");
  const OptionSpec slack_help = valued("slack", "TIME", "RTT slack added to the tolerance (default 2ms)");
  const OptionSpec attempts_help =
      valued("attempts", "N", "measurements of a check slower than allowed; the best stands (default 3)");
  return {
      {"up", "SCENARIO", "build the emulated WAN", {kRelease, kName, kQuiet}, cmd_up},
      {"down", "[NAME...]", "remove a testbed, also after a crash", {flag("all", "every testbed found")}, cmd_down},
      {"run",
       "SCENARIO -- CMD...",
       "up, (verify,) run CMD, down; exits with CMD's code (1 if verify fails)",
       {kRelease,
        kName,
        kQuiet,
        {"verify", Takes::optional_value, "rtt|rate", "measure every DC pair after up (rate: goodput too)"},
        valued("verify-tolerance", "P%", "with --verify: how far off a pair may be (default 10%)"),
        valued("verify-slack", "TIME", "with --verify: RTT slack (default 2ms)"),
        valued("verify-attempts", "N", "with --verify: measurements of a slow check (default 3)")},
       cmd_run},
      {"verify",
       "[SCENARIO | TESTBED]",
       "measure every DC pair's RTT (and goodput) against the configuration",
       {kTestbed, flag("rate", "measure goodput too"), tolerance_help, slack_help, attempts_help},
       cmd_verify},
      {"hosts", "", "the emulated hosts", {kTestbed, kJson}, cmd_hosts},
      {"exec",
       "HOST -- CMD...",
       "run CMD on an emulated host (its host name, names of all hosts resolve)",
       {kTestbed},
       cmd_exec},
      {"launch",
       "-- CMD...",
       "run CMD once per rank on emulated hosts with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR, ...)",
       {kTestbed, valued("hosts", "all|HOST|DC[,...]", "where the ranks run, one per host in this order (default all)"),
        valued("per-host", "N", "ranks per host (1 to 64, default 1): LOCAL_RANK 0 to N-1"),
        valued("experiment", "FILE",
               "a rank per worker of the experiment's plan, on its host, with WANLAB_STAGE and WANLAB_REPLICA"),
        valued("runtime", "process|podman", "plain processes (default), or a podman container per rank"),
        valued("image", "IMG", "with podman: the image to run (default: the machine's own root, --rootfs /)"),
        valued("master-port", "PORT", "MASTER_PORT (1 to 65535, default 29500)"),
        flag("slurm",
             "as a task of a Slurm job step (srun) on a machine of `wanlab join`: become the command, with the rank "
             "environment Slurm's placement gives"),
        valued("threads", "N", "OMP_NUM_THREADS per rank unless set (1 to 1024, default: cores / ranks)"),
        valued("grace", "SECONDS",
               "after the first failure, how long the others get before SIGKILL (0 to 600, "
               "default 5)")},
       cmd_launch},
      {"set", "DC DC", "change a link live (both directions unless --one-way); every link key is an option",
       set_options(), cmd_set},
      {"stats",
       "",
       "per DC pair counters and rates",
       {kTestbed, kJson, flag("watch", "repeat every interval"),
        valued("interval", "SECONDS", "sampling interval (0.01 to 86400, default 1)")},
       cmd_stats},
      {"status",
       "",
       "testbeds up, their release path, daemon alive",
       {kJson, valued("wait", "TESTBED", "wait until TESTBED is up here (for job scripts), then print its line"),
        valued("timeout", "SECONDS", "with --wait: give up after this long, exit 1 (0 to 86400, default 60)")},
       cmd_status},
      {"attach",
       "DEV SCENARIO",
       "the data plane on an existing interface",
       {kRelease, kName, kQuiet, valued("queue-num", "N", "the NFQUEUE number (0 to 65535)"),
        valued("netns", "NAME", "the interface's named network namespace"),
        valued("pid", "PID", "the interface is in this process's network namespace")},
       cmd_attach},
      {"join",
       "SCENARIO",
       "this machine's part of a scenario over machines (dc.machines): a DC's gateway shapes its links, the "
       "others route through it",
       {kName, kQuiet,
        valued("dev", "DEV", "the interface to other DCs (default: the one holding this machine's address)"),
        flag("hold", "stay until SIGTERM, SIGINT or SIGHUP, then take this machine's part down (a Slurm job step)")},
       cmd_join},
      {"demo",
       "[SCENARIO]",
       "bring up a WAN, measure RTT and goodput per DC pair, take it down",
       {kRelease, valued("seconds", "S", "goodput measured for S seconds per pair (0.1 to 3600, default 3)")},
       cmd_demo},
      {"perf", "server|client [HOST]", "multi-stream TCP goodput (iperf3-like; wanlab perf --help)", perf_options(),
       nullptr, cmd_perf},
      {"train", "EXPERIMENT", "run training workers over an emulated WAN (or --simulate)", train_options(), cmd_train},
      {"whatif",
       "SWEEP",
       "simulate every point of a sweep file: a table, and with --out points.csv and a plot per axis",
       {valued("out", "DIR", "write points.csv, one SVG per swept axis and points/N/card.yaml there"), kQuiet},
       cmd_whatif},
      {"plot",
       "CSV",
       "a line plot (SVG) of columns of a CSV file",
       {valued("x", "COLUMN", "the x column"), valued("y", "COLUMN[,COLUMN...]", "one line per column (or per series)"),
        valued("series", "COLUMN", "one line per value of this column"), valued("title", "TEXT", "the plot's title"),
        valued("xlabel", "TEXT", "the x axis's label (default: the column)"),
        valued("ylabel", "TEXT", "the y axis's label (default: the columns)"),
        flag("percent", "y values are fractions: show percentages"),
        valued("ymin", "N", "the y axis's lower end (default: min(0, data))"),
        valued("out", "FILE", "the SVG to write")},
       cmd_plot},
      {"compare",
       "RESULT...",
       "results.json of several runs side by side (a RESULT is a run's --out directory or its results.json)",
       {flag("markdown", "the table in Markdown"),
        flag("csv", "one CSV line per result (the columns are in docs/REPORTS.md)"),
        flag("ttfts", "one result's served requests as CSV: percentile,ttft_s, in TTFT order"),
        flag("kept-up-only", "leave out real runs whose emulation fell behind, each named on stderr")},
       cmd_compare},
      {"plan",
       "EXPERIMENT",
       "search tp, pp, dp, microbatches and DC order for the experiment's free GPUs, simulated; with --out "
       "plans.csv and plans.svg",
       {valued("top", "N", "show the N fastest plans (1 to 10000, default 10)"),
        valued("jobs", "N", "simulate N candidates at once, one per thread (1 to 1024, default: the cores)"),
        valued("out", "DIR", "write plans.csv (every simulated plan, fastest first) and plans.svg there"), kQuiet},
       cmd_plan},
      {"worker",
       "",
       "internal: one emulated GPU of train",
       {kControl, kId, flag("probe", "check that the binary runs, then exit")},
       cmd_worker,
       nullptr,
       true},
      {"prefill-worker",
       "",
       "internal: BubbleTea prefill on one emulated GPU of train",
       {kControl, kId},
       cmd_prefill_worker,
       nullptr,
       true},
      {"decode-sink", "", "internal: BubbleTea decode host of train", {kControl, kId}, cmd_decode_sink, nullptr, true},
      {"daemon",
       "",
       "internal: releaser and timed events of one testbed",
       {kTestbed, valued("ready-fd", "FD", "tell up \"ok\" or the error on this descriptor")},
       cmd_daemon,
       nullptr,
       true},
  };
}

// Set by run_command for command_line().
std::string& current_command_line() {
  static std::string line;
  return line;
}

std::string shell_quoted(const std::string& arg) {
  const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_-./=:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return arg;
  std::string quoted = "'";
  for (const char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string command_line() { return current_command_line(); }

// `wanlab set`'s schedule options (docs/SCENARIO.md, Schedules); cmd_set reads
// them apart from the link keys.
OptionSpecs schedule_options() {
  return {valued("schedule", "FILE", "load a CSV schedule (time 0: now)"),
          valued("mahimahi", "FILE", "load a Mahimahi trace as the rate schedule (time 0: now)"),
          valued("period", "TIME", "with --schedule: repeat every TIME"),
          valued("resolution", "TIME", "with --mahimahi: window of each rate (default 1ms)"),
          flag("no-schedule", "remove the schedule: the link keys alone again")};
}

const std::vector<Command>& commands() {
  static const std::vector<Command> table = make_commands();
  return table;
}

const Command* find_command(const std::string& name) {
  const auto& table = commands();
  const auto found =
      std::find_if(table.begin(), table.end(), [&](const Command& command) { return command.name == name; });
  return found == table.end() ? nullptr : &*found;
}

// The operands, the options, then what goes after "--" (run's "-- CMD...").
std::string usage_line(const Command& command) {
  const auto rest = command.operands.find("-- ");
  std::string line = command.name;
  if (!command.operands.empty() && rest != 0)
    line += " " + command.operands.substr(0, rest == std::string::npos ? rest : rest - 1);
  for (const auto& option : command.options) line += " " + usage_of(option);
  if (rest != std::string::npos) line += " " + command.operands.substr(rest);
  return line;
}

std::string help_text(const Command& command) {
  std::string text = fmt::format("usage: wanlab {}\n\n{}\n", usage_line(command), command.summary);
  if (!command.options.empty()) text += "\noptions:\n" + base::options_help(command.options);
  return text;
}

int run_command(const Command& command, Args args) {
  current_command_line() = "wanlab " + command.name;
  for (const std::string& arg : args) current_command_line() += " " + shell_quoted(arg);
  try {
    if (command.run_args) return command.run_args(args);
    return command.run(Options(args, command.options));
  } catch (const HelpRequested&) {
    fmt::print("{}", help_text(command));
    return 0;
  } catch (const UsageError& error) {
    fmt::print(stderr, "wanlab {}: {}\nusage: wanlab {}\n", command.name, error.what(), usage_line(command));
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "wanlab {}: {}\n", command.name, error.what());
    return 1;
  }
}

}  // namespace wanlab::cli
