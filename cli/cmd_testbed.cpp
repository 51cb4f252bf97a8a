// Subcommands that build, inspect, change and remove testbeds.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <chrono>
#include <optional>
#include <thread>

#include "commands.hpp"
#include "json.hpp"
#include "options.hpp"
#include "wanlab/base/idle_poll.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/launch.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/process.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/machines.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/units.hpp"
#include "wanlab/emulator/verify.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::cli {
namespace em = wanlab::emulator;
namespace {

std::string one_positional(const Options& options, const char* what) {
  if (options.positionals().size() != 1) throw UsageError(std::string("expected one ") + what);
  return options.positionals().front();
}

em::TestbedState bring_up(const std::string& scenario_path, const Options& options, bool verbose) {
  const em::Scenario scenario = em::load_scenario(scenario_path);
  em::UpOptions up;
  up.release = release_option(options);
  up.exe = base::self_exe();
  if (const auto name = options.get("name")) up.name = checked_testbed_name(*name, "--name");
  if (verbose) up.progress = [](const std::string& step) { fmt::print("wanlab up: {}\n", step); };
  return em::testbed_up(scenario, up);
}

// Measures the testbed, prints the table as it goes and each failure on
// stderr; true if every check passed.
bool verify_and_print(const em::TestbedState& state, const std::function<em::Scenario()>& configured,
                      const em::VerifyOptions& options, const char* command) {
  fmt::print("verify {}: {} DCs, release path {}; tolerance {}, RTT slack {}{}, up to {} attempt{}\n", state.name,
             state.dcs.size(), em::to_string(state.release), em::units::format_percent(options.tolerance),
             em::units::format_time(options.slack_ns), options.goodput ? ", goodput too" : "", options.attempts,
             options.attempts == 1 ? "" : "s");
  fmt::print("{}\n", em::verify_table_header());
  std::fflush(stdout);
  const auto print_row = [](const em::VerifyRow& row) {
    fmt::print("{}\n", em::format_verify_row(row));
    std::fflush(stdout);
  };
  // Across machines (a part of `wanlab join`): ping and iperf3 on the Slurm job's nodes.
  const auto result = state.machine
                          ? em::verify_machines(state, configured, options, print_row, em::slurm_probes(configured()))
                          : em::verify_testbed(state, configured, options, print_row);
  if (result.passed()) {
    fmt::print("verify {}: every pair within its bounds\n", state.name);
    std::fflush(stdout);
    return true;
  }
  if (const std::string nothing = result.nothing_measured(); !nothing.empty()) {
    fmt::print("verify {}: FAILED, {}\n", state.name, nothing);
    std::fflush(stdout);
    fmt::print(stderr, "wanlab {}: verify failed: {}\n", command, nothing);
    return false;
  }
  const auto failed =
      std::count_if(result.rows.begin(), result.rows.end(), [](const auto& row) { return !row.passed(); });
  fmt::print("verify {}: {} of {} checks FAILED\n", state.name, failed, result.rows.size());
  std::fflush(stdout);
  for (const auto& row : result.rows)
    if (!row.passed())
      fmt::print(stderr, "wanlab {}: verify failed: {}\n", command, em::describe_failure(row, options));
  return false;
}

void print_hosts_table(const em::TestbedState& state) {
  fmt::print("{:<16} {:<10} {:<16} {:<20} {}\n", "HOST", "DC", "IPV4", "IPV6", "NETNS");
  for (const auto& host : state.hosts)
    fmt::print("{:<16} {:<10} {:<16} {:<20} {}\n", host.name, host.dc, em::ipv4_to_string(host.ipv4),
               em::ipv6_to_string(host.ipv6), host.netns);
}

}  // namespace

int cmd_up(const Options& options) {
  const auto state = bring_up(one_positional(options, "scenario file"), options, !options.flag("quiet"));
  fmt::print("testbed {} is up: {} DCs, {} hosts, release path {} ({})\n", state.name, state.dcs.size(),
             state.hosts.size(), em::to_string(state.release), state.release_reason);
  print_hosts_table(state);
  fmt::print("next: wanlab exec {} -- CMD   |   wanlab stats   |   wanlab down {}\n", state.hosts.front().name,
             state.name);
  return 0;
}

int cmd_attach(const Options& options) {
  if (options.positionals().size() != 2) throw UsageError("expected an interface and a scenario file");
  em::AttachOptions attach;
  attach.release = release_option(options);
  attach.exe = base::self_exe();
  if (const auto name = options.get("name")) attach.name = checked_testbed_name(*name, "--name");
  attach.queue_num = options.integer<std::uint16_t>("queue-num", 0, 65535);
  const auto pid = options.integer<pid_t>("pid", 1, 0x3fffffff);
  const em::Scenario scenario = em::load_scenario(options.positionals()[1]);
  // The interface lives in a named namespace (--netns) or in a process's, such
  // as a Mininet host's (--pid); by default in ours.
  if (options.get("netns") && options.get("pid")) throw UsageError("give --netns or --pid, not both");
  if (pid) {
    const std::string proc = fmt::format("/proc/{}/ns/net", *pid);
    base::UniqueFd netns(::open(proc.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns) base::throw_errno(fmt::format("--pid {}: opening its network namespace", *pid));
    base::check(::setns(netns.get(), CLONE_NEWNET), fmt::format("--pid {}: entering its network namespace", *pid));
  } else if (auto name = options.get("netns")) {
    // A name under /run/netns, as `ip netns` takes it: one path component.
    if (name->empty() || *name == "." || *name == ".." || name->find('/') != std::string::npos)
      throw UsageError("--netns: expected a network namespace name (as in `ip netns list`), got " +
                       base::quoted(*name));
    base::UniqueFd netns = em::open_netns(*name);
    base::check(::setns(netns.get(), CLONE_NEWNET), "--netns " + *name + ": entering it");
  }
  if (!options.flag("quiet"))
    attach.progress = [](const std::string& step) { fmt::print("wanlab attach: {}\n", step); };
  const auto state = em::attach_up(options.positionals()[0], scenario, attach);
  fmt::print("testbed {} is attached to {}: {} DCs by address (pool {}/{}), release path {} ({})\n", state.name,
             state.dev, state.dcs.size(), em::ipv4_to_string(scenario.pool.addr), scenario.pool.len,
             em::to_string(state.release), state.release_reason);
  if (state.release == em::ReleasePath::nfqueue)
    fmt::print(
        "without sch_fq, packets are shaped as they ARRIVE on {}; attach on both ends to shape both directions\n",
        state.dev);
  fmt::print("remove with: wanlab down {}\n", state.name);
  return 0;
}

int cmd_join(const Options& options) {
  const em::Scenario scenario = em::load_scenario(one_positional(options, "scenario file"));
  em::JoinOptions join;
  join.exe = base::self_exe();
  if (const auto name = options.get("name")) join.name = checked_testbed_name(*name, "--name");
  if (const auto dev = options.get("dev")) {
    if (!em::is_valid_interface_name(*dev))
      throw UsageError("--dev: expected an interface name (1-15 of [A-Za-z0-9_.@:-]), got " + base::quoted(*dev));
    join.dev = *dev;
  }
  if (!options.flag("quiet"))
    join.progress = [](const std::string& step) {
      fmt::print("wanlab join: {}\n", step);
      std::fflush(stdout);
    };
  // With --hold the signals that end a Slurm step (or a terminal) are noted
  // from here on: one during join stops it there, one after takes the WAN down.
  std::optional<base::InterruptGuard> hold;
  if (options.flag("hold")) hold.emplace();
  const em::MachineRole role = em::find_machine_role(scenario, em::this_machine(), em::resolve_host);
  const auto state = em::join_machine(scenario, role, join);
  if (role.gateway) {
    fmt::print(
        "testbed {}: this machine is DC {}'s gateway; the DC's links to {} other DCs leave through {} (release "
        "path fq)\n",
        state.name, state.machine->dc, state.dcs.size() - 1, state.dev);
    // Even with --quiet: nothing would cross the WAN, and nothing else would say why.
    for (const std::string& backend : em::forward_dropping_backends())
      fmt::print(stderr,
                 "wanlab join: warning: {}'s FORWARD policy is DROP here (Docker sets it): traffic to other DCs, "
                 "which this gateway forwards, is dropped unless a rule accepts it, e.g. {} -I FORWARD -i {} -o {} "
                 "-j ACCEPT (and -D to remove it after)\n",
                 backend, backend, state.dev, state.dev);
  } else
    fmt::print("testbed {}: this machine is in DC {}; traffic to other DCs goes through its gateway {} ({} routes)\n",
               state.name, state.machine->dc, em::ipv4_to_string(role.gateway_address), state.machine->routes.size());
  if (!hold) {
    fmt::print("remove with: wanlab down {}\n", state.name);
    return 0;
  }
  fmt::print("holding {} until SIGTERM, SIGINT or SIGHUP (the end of the job step), then taking it down\n", state.name);
  std::fflush(stdout);
  while (base::interrupted_by() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  em::testbed_down(state.name);
  fmt::print("testbed {} is down (signal {})\n", state.name, base::interrupted_by());
  return 0;
}

int cmd_down(const Options& options) {
  std::vector<std::string> names = options.positionals();
  if (options.flag("all") && !names.empty()) throw UsageError("give testbed names or --all, not both");
  for (const auto& name : names) checked_testbed_name(name, "testbed");
  if (options.flag("all")) {
    names = em::testbeds_found();
  } else if (names.empty()) {
    names.push_back(em::resolve_testbed(std::nullopt));
  }
  for (const auto& name : names) {
    em::testbed_down(name);
    fmt::print("testbed {} is down\n", name);
  }
  if (names.empty()) fmt::print("no testbed was up\n");
  // A `wanlab train` killed outright leaves its idle pollers' cgroup (they die with it).
  for (const auto& dir : base::remove_stale_idle_cgroups()) fmt::print("removed the idle pollers' cgroup {}\n", dir);
  return 0;
}

int cmd_run(const Options& options) {
  if (options.rest().empty()) throw UsageError("expected a command after --");
  // Every option is checked before the testbed is built.
  std::optional<em::VerifyOptions> verify;
  if (options.flag("verify")) {
    verify = verify_options(options, "verify-tolerance", "verify-slack", "verify-attempts");
    try {
      verify->goodput = em::parse_verify_check(options.get("verify").value_or("rtt"));
    } catch (const std::invalid_argument& error) {
      throw UsageError(std::string("--verify: ") + error.what());
    }
  } else {
    for (const char* name : {"verify-tolerance", "verify-slack", "verify-attempts"})
      if (options.get(name)) throw UsageError(fmt::format("--{} needs --verify", name));
  }
  const auto state = bring_up(one_positional(options, "scenario file"), options, !options.flag("quiet"));
  ::setenv("WANLAB_TESTBED", state.name.c_str(), 1);
  int status = 1;
  try {
    // A testbed that does not do what the scenario says fails the run before
    // the command starts.
    if (verify && !verify_and_print(
                      state, [&state] { return em::current_scenario(state); }, *verify, "run")) {
      em::testbed_down(state.name);
      return 1;
    }
    status = em::run_argv(options.rest(), "", false, true);
  } catch (...) {
    em::testbed_down(state.name);
    throw;
  }
  em::testbed_down(state.name);
  return status;
}

int cmd_verify(const Options& options) {
  if (options.positionals().size() > 1) throw UsageError("expected at most one scenario file or testbed name");
  em::VerifyOptions verify = verify_options(options, "tolerance", "slack", "attempts");
  verify.goodput = options.flag("rate");
  const std::string target = options.positionals().empty() ? "" : options.positionals().front();
  // A path (with a '/' or ending in .toml) is a scenario file to compare with;
  // anything else names the testbed, compared with its own scenario as it runs now.
  if (target.find('/') != std::string::npos || target.ends_with(".toml")) {
    const em::Scenario file = em::load_scenario(target);
    std::optional<std::string> name = testbed_option(options);
    const char* env = std::getenv("WANLAB_TESTBED");
    if (!name && !(env && *env)) name = file.name;
    const auto state = em::load_state(em::resolve_testbed(name));
    return verify_and_print(
               state, [&] { return em::scenario_now(state, file, false); }, verify, "verify")
               ? 0
               : 1;
  }
  if (!target.empty() && options.get("testbed")) throw UsageError("give a testbed name or --testbed, not both");
  const auto name = target.empty() ? testbed_option(options) : checked_testbed_name(target, "testbed");
  const auto state = em::load_state(em::resolve_testbed(name));
  return verify_and_print(
             state, [&state] { return em::current_scenario(state); }, verify, "verify")
             ? 0
             : 1;
}

int cmd_hosts(const Options& options) {
  const auto state = em::load_state(em::resolve_testbed(testbed_option(options)));
  if (!options.flag("json")) {
    print_hosts_table(state);
    return 0;
  }
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& host : state.hosts)
    hosts.push_back({{"name", host.name},
                     {"dc", host.dc},
                     {"netns", host.netns},
                     {"ipv4", em::ipv4_to_string(host.ipv4)},
                     {"ipv6", em::ipv6_to_string(host.ipv6)}});
  print_json(hosts);
  return 0;
}

int cmd_exec(const Options& options) {
  if (options.rest().empty()) throw UsageError("expected a command after --");
  const auto state = em::load_state(em::resolve_testbed(testbed_option(options)));
  const auto& host = state.host(one_positional(options, "host name"));
  base::UniqueFd netns = em::open_netns(host.netns);
  base::check(::setns(netns.get(), CLONE_NEWNET), host.name + ": entering its network namespace");
  base::take_identity(em::host_identity(state, host));
  ::setenv("WANLAB_HOST", host.name.c_str(), 1);
  ::setenv("WANLAB_DC", host.dc.c_str(), 1);
  ::setenv("WANLAB_TESTBED", state.name.c_str(), 1);
  base::exec_argv(options.rest(), host.name + ": running " + options.rest().front());
}

namespace {

// One rank per worker of the experiment's plan (rank = the worker's number),
// on the host the plan puts it, with its stage and replica.
std::vector<em::LaunchRank> experiment_ranks(const em::TestbedState& state, const std::string& file) {
  const harness::Experiment experiment = harness::load_experiment(file);
  const harness::Plan plan = harness::make_plan(experiment, harness::load_testbed(experiment));
  int replicas = 0;
  for (const auto& worker : plan.workers) replicas = std::max(replicas, worker.worker.replica + 1);
  std::vector<em::LaunchRank> ranks;
  for (const auto& each : plan.workers) {
    const harness::Worker& worker = each.worker;
    em::LaunchRank rank{state.host(worker.host), {}};
    rank.extra = {{"WANLAB_STAGE", std::to_string(worker.stage)},
                  {"WANLAB_STAGES", std::to_string(plan.stage_dc.size())},
                  {"WANLAB_REPLICA", std::to_string(worker.replica)},
                  {"WANLAB_REPLICAS", std::to_string(replicas)}};
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

}  // namespace

namespace {

// `launch --slurm`: this task of a Slurm job step becomes the program, with
// the rank environment Slurm's placement gives (srun started one per task).
int exec_as_slurm_rank(const Options& options) {
  for (const char* other : {"hosts", "per-host", "experiment", "runtime", "image", "grace"})
    if (options.get(other)) throw UsageError(fmt::format("--slurm: Slurm places the ranks; not with --{}", other));
  const auto state = em::load_state(em::resolve_testbed(testbed_option(options)));
  const em::SlurmTask task = em::slurm_task([](const char* name) { return std::getenv(name); });
  const em::Environment environment =
      em::slurm_rank_environment(state, task, options.integer<std::uint16_t>("master-port", 1, 65535).value_or(29500),
                                 options.integer<int>("threads", 1, 1024).value_or(0));
  for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> argv;
  for (const auto& word : options.rest()) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(argv[0], argv.data());
  fmt::print(stderr, "wanlab launch: {}: {}\n", options.rest().front(), std::strerror(errno));
  return 127;
}

}  // namespace

int cmd_launch(const Options& options) {
  if (options.rest().empty()) throw UsageError("expected a command after --");
  if (!options.positionals().empty()) throw UsageError("hosts go in --hosts, the command after --");
  if (options.flag("slurm")) return exec_as_slurm_rank(options);
  const auto experiment = options.get("experiment");
  if (experiment && (options.get("hosts") || options.get("per-host")))
    throw UsageError("--experiment places the ranks: not with --hosts or --per-host");
  em::LaunchPlan plan;
  plan.argv = options.rest();
  const int per_host = options.integer<int>("per-host", 1, 64).value_or(1);
  plan.master_port = options.integer<std::uint16_t>("master-port", 1, 65535).value_or(29500);
  plan.threads_per_rank = options.integer<int>("threads", 1, 1024).value_or(0);
  plan.grace_ms = options.integer<int>("grace", 0, 600).value_or(5) * 1000;
  const std::string runtime = options.get("runtime").value_or("process");
  if (runtime == "podman") {
    plan.container = em::LaunchContainer{options.get("image").value_or("")};
    if (!plan.container->image.empty()) image_option(plan.container->image);
  } else if (runtime != "process") {
    throw UsageError("--runtime: expected process or podman, got " + base::quoted(runtime));
  } else if (options.get("image")) {
    throw UsageError("--image needs --runtime podman");
  }
  const auto state = em::load_state(em::resolve_testbed(testbed_option(options)));
  if (state.hosts.empty()) throw UsageError(state.name + " is attached to an interface: it has no hosts to launch on");
  if (experiment) {
    plan.ranks = experiment_ranks(state, *experiment);
    return em::launch(state, plan);
  }
  std::vector<em::Host> hosts;
  try {
    hosts = em::select_hosts(state, options.get("hosts").value_or("all"));
  } catch (const std::invalid_argument& error) {
    throw UsageError(std::string("--hosts: ") + error.what());
  }
  for (const auto& host : hosts)
    for (int local = 0; local < per_host; ++local) plan.ranks.push_back({host, {}});
  return em::launch(state, plan);
}

// Every option but --testbed and --one-way is a link key, checked here by the
// key's own parser, so a bad value is a bad command line before the testbed
// is read.
namespace {

bool is_schedule_option(const std::string& name) {
  const OptionSpecs specs = schedule_options();
  return std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& spec) { return spec.name == name; });
}

std::uint64_t positive_time_option(const Options& options, const std::string& name, std::uint64_t otherwise) {
  const auto text = options.get(name);
  if (!text) return otherwise;
  try {
    const std::uint64_t ns = em::units::parse_time(*text);
    if (ns > 0) return ns;
  } catch (const std::invalid_argument& error) {
    throw UsageError(fmt::format("--{}: {}", name, error.what()));
  }
  throw UsageError(fmt::format("--{}: must be greater than 0", name));
}

// The schedule --schedule or --mahimahi names, read and checked before the
// testbed is touched; nullopt when neither is given.
std::optional<em::LiveSchedule> schedule_of(const Options& options) {
  const auto csv = options.get("schedule");
  const auto mahimahi = options.get("mahimahi");
  if (csv && mahimahi) throw UsageError("--schedule and --mahimahi: give one of them");
  if (options.get("period") && !csv) throw UsageError("--period: only with --schedule");
  if (options.get("resolution") && !mahimahi) throw UsageError("--resolution: only with --mahimahi");
  if (options.flag("no-schedule") && (csv || mahimahi)) throw UsageError("--no-schedule: not with a schedule to load");
  const std::uint64_t period = positive_time_option(options, "period", 0);
  const std::uint64_t resolution = positive_time_option(options, "resolution", 1'000'000);
  if (csv) return em::read_live_csv(*csv, period);
  if (mahimahi) return em::read_live_mahimahi(*mahimahi, resolution);
  return std::nullopt;
}

}  // namespace

int cmd_set(const Options& options) {
  if (options.positionals().size() != 2) throw UsageError("expected two DC names");
  em::Change change;
  change.from = options.positionals()[0];
  change.to = options.positionals()[1];
  change.symmetric = !options.flag("one-way");
  for (auto [field, value] : options.ordered()) {
    if (field == "testbed" || is_schedule_option(field)) continue;
    std::replace(field.begin(), field.end(), '-', '_');
    try {
      em::parse_link_option({}, field, value);
    } catch (const em::ScenarioError& error) {
      throw UsageError(error.what());
    }
    change.fields.emplace_back(field, value);
  }
  const std::optional<em::LiveSchedule> schedule = schedule_of(options);
  const bool schedule_changes = schedule || options.flag("no-schedule");
  if (change.fields.empty() && !schedule_changes)
    throw UsageError("nothing to set: give at least one link setting (--rate, --delay, ...; wanlab set --help)");
  const auto state = em::load_state(em::resolve_testbed(testbed_option(options)));
  std::vector<std::string> said;
  try {
    if (!change.fields.empty()) em::apply_change(state, change);
    for (const auto& [field, value] : change.fields) said.push_back(field + "=" + value);
    if (schedule_changes) {
      em::set_schedule_live(state, change, schedule ? &*schedule : nullptr);
      said.push_back(schedule ? fmt::format("schedule of {} steps from now", schedule->schedule.steps.size())
                              : "no schedule");
    }
  } catch (const em::ChangeRefused& refused) {
    throw UsageError(refused.what());
  }
  fmt::print("{} {} {}: {}\n", change.from, change.symmetric ? "<->" : "->", change.to, fmt::join(said, " "));
  return 0;
}

namespace {

// A member machine has no daemon: its gateway runs the DC's.
bool running_as_it_should(const em::TestbedState& state) {
  return state.kind == em::TestbedKind::member || em::daemon_alive(state);
}

std::string status_line(const em::TestbedState& state) {
  const std::string where = state.machine ? fmt::format("DC {}'s {} on {}", state.machine->dc,
                                                        state.machine->gateway ? "gateway" : "member", state.dev)
                            : state.kind == em::TestbedKind::attached ? "attached to " + state.dev
                                                                      : std::to_string(state.hosts.size()) + " hosts";
  const std::string daemon = state.kind == em::TestbedKind::member ? "none (its gateway runs the DC's)"
                             : em::daemon_alive(state)             ? "running"
                                                                   : "NOT RUNNING (wanlab down " + state.name + ")";
  return fmt::format("{}: {} DCs, {}, release path {} ({}); daemon {}", state.name, state.dcs.size(), where,
                     em::to_string(state.release), state.release_reason, daemon);
}

// `status --wait NAME`: until the testbed is up here (a job script's step
// that waits for `join --hold` on every node), or the timeout.
int wait_for_testbed(const std::string& name, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string last = "no such testbed";
  while (true) {
    try {
      const auto state = em::load_state(name);
      if (running_as_it_should(state)) {
        fmt::print("{}\n", status_line(state));
        return 0;
      }
      last = "its daemon is not running";
    } catch (const std::exception& error) {
      last = error.what();
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  fmt::print(stderr, "wanlab status: testbed {} is not up after {} s ({})\n", name, timeout_s, last);
  return 1;
}

}  // namespace

int cmd_status(const Options& options) {
  if (const auto name = options.get("wait"))
    return wait_for_testbed(checked_testbed_name(*name, "--wait"), options.decimal("timeout", 0, 86400).value_or(60));
  if (options.get("timeout")) throw UsageError("--timeout goes with --wait");
  nlohmann::json list = nlohmann::json::array();
  for (const auto& name : em::testbeds_found()) {
    try {
      const auto state = em::load_state(name);
      if (options.flag("json")) {
        list.push_back({{"name", name},
                        {"release", em::to_string(state.release)},
                        {"release_reason", state.release_reason},
                        {"attached_to", state.dev},
                        {"hosts", state.hosts.size()},
                        {"daemon_alive", em::daemon_alive(state)}});
        continue;
      }
      fmt::print("{}\n", status_line(state));
    } catch (const std::exception& error) {
      if (options.flag("json")) {
        list.push_back({{"name", name}, {"error", error.what()}});
        continue;
      }
      fmt::print("{}: left over or half-built ({}); remove it with wanlab down {}\n", name, error.what(), name);
    }
  }
  if (options.flag("json")) {
    print_json(list);
  } else if (list.empty() && em::testbeds_found().empty()) {
    fmt::print("no testbed is up\n");
  }
  return 0;
}

}  // namespace wanlab::cli
