// A testbed's life: `up` builds it from the rooms beside this file (host_setup,
// release_path, daemon, state_file), `down` removes everything of it, even
// after a crash, and the lookups find which testbeds are up.
#include "wanlab/emulator/testbed.hpp"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <stdexcept>

#include "testbed/testbed_internal.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/rtnl.hpp"

namespace fs = std::filesystem;

namespace wanlab::emulator {
using namespace detail;
namespace {

void say(const UpOptions& options, const std::string& message) {
  if (options.progress) options.progress(message);
}

// The namespaces of testbed `name`: wanlab-<name>.<one word>. A testbed name
// holds no '.', so another testbed's namespaces never match.
std::vector<std::string> testbed_namespaces(const std::string& name) {
  const std::string prefix = kPrefix + name + ".";
  std::vector<std::string> found;
  for (auto& ns : list_netns(prefix))
    if (ns.find('.', prefix.size()) == std::string::npos && ns.size() > prefix.size()) found.push_back(std::move(ns));
  return found;
}

}  // namespace

TestbedState testbed_up(const Scenario& scenario, const UpOptions& options) {
  TestbedState state;
  state.name = options.name.empty() ? scenario.name : options.name;
  check_testbed_name(state.name, options.name.empty() ? scenario.path + ": name" : "--name");
  if (fs::exists(run_dir(state.name)) || netns_exists(core_netns(state.name)))
    throw std::runtime_error(fmt::format("testbed \"{}\" is already up (wanlab down {})", state.name, state.name));
  for (const auto& dc : scenario.dcs) state.dcs.push_back(dc.name);
  state.hosts = plan_hosts(scenario, state.name);
  state.created_unix = ::time(nullptr);
  state.created_mono_ns = base::monotonic_ns();
  state.netns = core_netns(state.name);

  base::InterruptGuard interrupts;
  try {
    create_run_dir(state, scenario);  // from here on `down` knows the testbed
    if (scenario.host.tcp_congestion) allow_congestion_control(*scenario.host.tcp_congestion);
    mount_bpffs(state.name);

    say(options, "creating core namespace " + core_netns(state.name));
    create_netns(core_netns(state.name));
    NetnsScope in_core(core_netns(state.name));
    Rtnl core;
    prepare_core(core);
    std::tie(state.release, state.release_reason) = choose_release(options.release, core);
    say(options, "release path: " + to_string(state.release) + " (" + state.release_reason + ")");

    Datapath datapath = load_datapath(scenario, state, true, {}, std::nullopt);

    say(options, fmt::format("creating {} hosts", state.hosts.size()));
    for (const Host& host : state.hosts) {
      base::check_interrupted();
      build_host(scenario, core, host);
      attach_program(core, host, state.release, datapath.program_fd());
    }
    if (state.release == ReleasePath::nfqueue) install_nfqueue_rule(state);
    base::check_interrupted();
    say(options, "starting the daemon");
    start_daemon(state, options.exe);
  } catch (...) {
    testbed_down(state.name);
    throw;
  }
  return state;
}

void testbed_down(const std::string& name) {
  check_testbed_name(name, "testbed");
  std::optional<TestbedState> state;
  std::string state_error;
  try {
    state = load_state(name);
  } catch (const std::exception& error) {
    // Half-built, or its state is gone or broken: fall back to what carries its name.
    if (fs::exists(state_path(name))) state_error = error.what();
  }
  // Every step runs even if an earlier one failed; the failures are reported together.
  std::vector<std::string> failures;
  auto attempt = [&](auto&& step) {
    try {
      step();
    } catch (const std::exception& error) {
      failures.push_back(error.what());
    }
  };
  if (state && pid_is_our_daemon(state->daemon_pid, name)) attempt([&] { base::terminate_pids({state->daemon_pid}); });
  if (!state) attempt([&] { base::terminate_pids(daemons_of(name)); });
  if (state && state->kind == TestbedKind::attached) attempt([&] { detach_interface(*state); });
  if (state && state->machine) attempt([&] { leave_machine(*state); });
  // Without a readable state an attached interface cannot be named: say so.
  if (!state && !state_error.empty() && netns_exists(kPrefix + name + kAttachedSuffix))
    failures.push_back(
        fmt::format("{}: the state file is broken ({}), so the interface it was attached to keeps our "
                    "filter; remove it with `tc filter del dev DEV ingress pref {}` in that namespace",
                    name, state_error, kFilterPriority));
  for (const auto& ns : testbed_namespaces(name)) {
    // An attached testbed's namespace is the user's: we only hold a reference.
    if (!ns.ends_with(kAttachedSuffix)) attempt([&] { base::terminate_pids(netns_pids(ns)); });
    attempt([&] { delete_netns(ns); });
  }
  attempt([&] {
    const std::string bpf = bpffs_dir(name);
    if (::umount2(bpf.c_str(), MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
      base::throw_errno(name + ": unmounting " + bpf);
  });
  attempt([&] {
    std::error_code ec;
    fs::remove_all(run_dir(name), ec);
    if (ec) throw std::runtime_error(name + ": removing " + run_dir(name) + ": " + ec.message());
  });
  if (testbeds_found().empty()) attempt(restore_allowed_congestion_control);
  if (!failures.empty()) throw std::runtime_error(fmt::format("{}", fmt::join(failures, "; ")));
}

std::vector<std::string> testbeds_found() {
  std::set<std::string> names;
  std::error_code ec;
  // Only names that pass the rule: anything else under the run root or in
  // /run/netns was not made by us, and is never touched.
  for (const auto& entry : fs::directory_iterator(kRunRoot, ec)) {
    const std::string name = entry.path().filename();
    if (is_valid_testbed_name(name) && entry.is_directory() && !entry.is_symlink()) names.insert(name);
  }
  for (const auto& ns : list_netns(kPrefix)) {
    const auto dot = ns.find('.');
    if (dot == std::string::npos) continue;
    const std::string name = ns.substr(std::string(kPrefix).size(), dot - std::string(kPrefix).size());
    if (is_valid_testbed_name(name)) names.insert(name);
  }
  return {names.begin(), names.end()};
}

std::string resolve_testbed(const std::optional<std::string>& explicit_name) {
  if (explicit_name) {
    check_testbed_name(*explicit_name, "--testbed");
    if (!fs::exists(state_path(*explicit_name)))
      throw std::runtime_error("no testbed \"" + *explicit_name + "\" is up");
    return *explicit_name;
  }
  if (const char* env = std::getenv("WANLAB_TESTBED"); env && *env) {
    check_testbed_name(env, "$WANLAB_TESTBED");
    if (!fs::exists(state_path(env)))
      throw std::runtime_error(fmt::format("no testbed \"{}\" is up ($WANLAB_TESTBED)", env));
    return env;
  }
  const auto found = testbeds_found();
  if (found.empty()) throw std::runtime_error("no testbed is up (wanlab up SCENARIO)");
  if (found.size() > 1) {
    std::string names;
    for (const auto& n : found) names += (names.empty() ? "" : ", ") + n;
    throw std::runtime_error("several testbeds are up (" + names + "): choose one with --testbed NAME");
  }
  return found.front();
}

}  // namespace wanlab::emulator
