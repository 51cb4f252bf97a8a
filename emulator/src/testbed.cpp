#include "wanlab/emulator/testbed.hpp"


#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <toml++/toml.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>

#include "wanlab/base/parse.hpp"
#include "testbed_internal.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/process.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/sys.hpp"

namespace fs = std::filesystem;

namespace wanlab::emulator {
namespace detail {

constexpr std::uint32_t kCoreGateway = 0xa9fe0001;  // 169.254.0.1 on every core-side veth
constexpr std::array<std::uint8_t, 16> kCoreGateway6 = {0xfd, 0x77, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr const char* kHostIfname = "wanlab0";

std::atomic<int> interrupted_by{0};

void note_interrupt(int sig) { interrupted_by = sig; }

void check_interrupted() {
  if (int sig = interrupted_by.load()) throw std::runtime_error(fmt::format("interrupted by signal {}", sig));
}

InterruptGuard::InterruptGuard() {
  interrupted_by = 0;
  struct sigaction action{};
  action.sa_handler = note_interrupt;
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

std::uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

void say(const UpOptions& options, const std::string& message) {
  if (options.progress) options.progress(message);
}

std::vector<Host> plan_hosts(const Scenario& scenario, const std::string& testbed) {
  std::vector<Host> hosts;
  for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc) {
    const std::uint32_t dc_base = scenario.pool.addr + (static_cast<std::uint32_t>(dc) << 8);
    for (int i = 0; i < scenario.dcs[dc].hosts; ++i) {
      Host host;
      host.dc = scenario.dcs[dc].name;
      host.dc_index = static_cast<int>(dc);
      host.index = i;
      host.name = fmt::format("{}-{}", host.dc, i);
      host.netns = host_netns(testbed, host.name);
      host.ipv4 = dc_base + static_cast<std::uint32_t>(i) + 1;
      host.ipv6 = dc_prefix_v6(static_cast<int>(dc));
      host.ipv6[14] = static_cast<std::uint8_t>((i + 1) >> 8);
      host.ipv6[15] = static_cast<std::uint8_t>(i + 1);
      host.core_ifname = fmt::format("wanlabh{}", hosts.size());
      hosts.push_back(std::move(host));
    }
  }
  return hosts;
}

// The kernel's answer to "is there an fq qdisc?", asked on the core's loopback.
std::optional<std::string> fq_missing_reason(Rtnl& core) {
  const int lo = core.link_index("lo");
  try {
    core.add_fq_root(lo, FqOptions{});
  } catch (const std::system_error& error) {
    return fmt::format("the kernel has no sch_fq ({})", error.what());
  }
  core.delete_root_qdisc(lo);
  return std::nullopt;
}

std::optional<std::string> nfqueue_missing_reason() {
  if (::access("/proc/net/netfilter/nfnetlink_queue", F_OK) != 0)
    return "the kernel has no nfnetlink_queue (/proc/net/netfilter/nfnetlink_queue is missing)";
  if (::access("/usr/sbin/iptables-legacy", X_OK) != 0 && ::access("/usr/sbin/iptables", X_OK) != 0)
    return "iptables is not installed (apt-get install iptables)";
  return std::nullopt;
}

std::pair<ReleasePath, std::string> choose_release(ReleaseChoice choice, Rtnl& core) {
  const auto fq_missing = fq_missing_reason(core);
  const auto nfqueue_missing = nfqueue_missing_reason();
  switch (choice) {
    case ReleaseChoice::fq:
      if (fq_missing) throw std::runtime_error("--release fq: " + *fq_missing);
      return {ReleasePath::fq, "asked for with --release fq"};
    case ReleaseChoice::nfqueue:
      if (nfqueue_missing) throw std::runtime_error("--release nfqueue: " + *nfqueue_missing);
      return {ReleasePath::nfqueue, "asked for with --release nfqueue"};
    case ReleaseChoice::automatic:
      break;
  }
  if (!fq_missing) return {ReleasePath::fq, "auto: the kernel has sch_fq, which enforces departure times in the kernel"};
  if (!nfqueue_missing) return {ReleasePath::nfqueue, "auto: " + *fq_missing + ", so a userspace NFQUEUE releaser enforces departure times"};
  throw std::runtime_error("no release path: " + *fq_missing + "; " + *nfqueue_missing);
}

// The nftables backend lacks the queue statement on some kernels; the legacy
// backend's NFQUEUE target works wherever nfnetlink_queue does.
std::string iptables_binary() {
  return ::access("/usr/sbin/iptables-legacy", X_OK) == 0 ? "/usr/sbin/iptables-legacy" : "/usr/sbin/iptables";
}

std::string ip6tables_binary() {
  return ::access("/usr/sbin/ip6tables-legacy", X_OK) == 0 ? "/usr/sbin/ip6tables-legacy" : "/usr/sbin/ip6tables";
}


std::vector<std::string> nfqueue_rule(const TestbedState& state, const std::string& action, bool ipv6) {
  std::vector<std::string> argv = {ipv6 ? ip6tables_binary() : iptables_binary(), "-w"};
  if (state.kind == TestbedKind::attached) {
    // Before routing, so packets for this namespace and forwarded ones both wait.
    argv.insert(argv.end(), {"-t", "mangle", action, "PREROUTING", "-i", state.dev});
  } else {
    argv.insert(argv.end(), {action, "FORWARD"});
  }
  argv.insert(argv.end(), {"-m", "mark", "--mark", fmt::format("{:#x}/{:#x}", WANLAB_MARK_HOLD, WANLAB_MARK_HOLD), "-m",
                           "comment", "--comment", "wanlab-" + state.name, "-j", "NFQUEUE", "--queue-num",
                           std::to_string(state.queue_num)});
  return argv;
}

std::vector<bool> nfqueue_rule_families(const TestbedState& state) {
  // An attached testbed knows only the scenario's IPv4 pool.
  if (state.kind == TestbedKind::attached) return {false};
  return {false, true};
}

void install_nfqueue_rule(const TestbedState& state) {
  for (bool ipv6 : nfqueue_rule_families(state)) {
    const auto argv = nfqueue_rule(state, "-A", ipv6);
    const int status = run_argv(argv, state.netns, true);
    if (status != 0)
      throw std::runtime_error(fmt::format("{}: installing the NFQUEUE rule: {} exited with {}", state.netns, argv[0], status));
  }
}


void setup_host_sysctls(const Scenario& scenario) {
  if (scenario.host.tcp_congestion)
    write_sysctl("/proc/sys/net/ipv4/tcp_congestion_control", *scenario.host.tcp_congestion);
  if (scenario.host.tcp_wmem_max)
    write_sysctl("/proc/sys/net/ipv4/tcp_wmem", fmt::format("4096 16384 {}", *scenario.host.tcp_wmem_max));
  if (scenario.host.tcp_rmem_max)
    write_sysctl("/proc/sys/net/ipv4/tcp_rmem", fmt::format("4096 131072 {}", *scenario.host.tcp_rmem_max));
  if (scenario.host.tcp_slow_start_after_idle)
    write_sysctl("/proc/sys/net/ipv4/tcp_slow_start_after_idle", *scenario.host.tcp_slow_start_after_idle ? "1" : "0");
}

// In a network namespace other than the first, the kernel lets the default
// congestion control be only one listed in the global
// tcp_allowed_congestion_control. We add ours there if needed, remember the
// original list, and restore it when the last testbed goes down.
constexpr const char* kAllowedCc = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

std::string allowed_cc_backup() { return std::string(kRunRoot) + "/.tcp_allowed_congestion_control"; }

void allow_congestion_control(const std::string& name) {
  std::string allowed = read_file(kAllowedCc);
  while (!allowed.empty() && allowed.back() == '\n') allowed.pop_back();
  std::istringstream words(allowed);
  for (std::string word; words >> word;)
    if (word == name) return;
  if (!fs::exists(allowed_cc_backup())) base::replace_file(allowed_cc_backup(), allowed, 0600);
  write_sysctl(kAllowedCc, allowed + " " + name);
}

void restore_allowed_congestion_control() {
  if (!fs::exists(allowed_cc_backup())) return;
  write_sysctl(kAllowedCc, base::read_regular_file(allowed_cc_backup(), base::ReadRules{4096, false}));
  fs::remove(allowed_cc_backup());
}

// Links made later in the namespace skip duplicate address detection, which
// would hold IPv6 neighbour discovery back for a second on every new link.
void skip_ipv6_dad_in_current_netns() {
  write_sysctl("/proc/sys/net/ipv6/conf/default/accept_dad", "0");
  write_sysctl("/proc/sys/net/ipv6/conf/all/accept_dad", "0");
}

void build_host(const Scenario& scenario, Rtnl& core, const Host& host) {
  create_netns(host.netns);
  {
    NetnsScope in_host(host.netns);
    skip_ipv6_dad_in_current_netns();
  }
  {
    UniqueFd host_fd = open_netns(host.netns);
    core.add_veth(host.core_ifname, kHostIfname, host_fd.get());
  }
  const int core_if = core.link_index(host.core_ifname);
  core.add_address_v4(core_if, kCoreGateway, 32);
  core.set_up(core_if);
  core.add_route_v4(host.ipv4, 32, core_if, std::nullopt);
  core.add_address_v6(core_if, kCoreGateway6, 128);
  core.add_route_v6(host.ipv6, 128, core_if, std::nullopt);

  NetnsScope in_host(host.netns);
  Rtnl rtnl;
  rtnl.set_up(rtnl.link_index("lo"));
  const int host_if = rtnl.link_index(kHostIfname);
  rtnl.add_address_v4(host_if, host.ipv4, 32);
  rtnl.add_address_v6(host_if, host.ipv6, 128);
  rtnl.set_up(host_if);
  rtnl.add_route_v4(0, 0, host_if, kCoreGateway);
  rtnl.add_route_v6({}, 0, host_if, kCoreGateway6);
  try {
    setup_host_sysctls(scenario);
  } catch (const std::exception& error) {
    throw std::runtime_error(host.name + ": " + error.what());
  }
}

void attach_program(Rtnl& core, const Host& host, ReleasePath release, int prog_fd) {
  const int core_if = core.link_index(host.core_ifname);
  core.add_clsact(core_if);
  if (release == ReleasePath::fq) {
    // Departure times are stamped on the way out to the destination host and
    // enforced by fq on that same interface.
    core.add_fq_root(core_if, FqOptions{});
    core.add_bpf_filter(core_if, false, prog_fd, "wanlab_tc");
  } else {
    // Stamped on the way in, so the FORWARD chain's NFQUEUE rule sees the mark.
    core.add_bpf_filter(core_if, true, prog_fd, "wanlab_tc");
  }
}

Datapath load_datapath(const Scenario& scenario, const TestbedState& state, bool with_ipv6) {
  Datapath datapath = Datapath::load(static_cast<int>(scenario.dcs.size()),
                                     state.release == ReleasePath::fq ? WANLAB_RELEASE_FQ : WANLAB_RELEASE_NFQUEUE);
  for (int dc = 0; dc < static_cast<int>(scenario.dcs.size()); ++dc) {
    datapath.set_dc_prefix_v4(scenario.pool.addr + (static_cast<std::uint32_t>(dc) << 8), 24, dc);
    if (with_ipv6) datapath.set_dc_prefix_v6(dc_prefix_v6(dc), 64, dc);
  }
  write_pairs(datapath, scenario);
  write_schedules(datapath, scenario, state.created_mono_ns);
  datapath.pin(bpffs_dir(state.name));
  return datapath;
}

// A directory of ours: made here (EEXIST is an error unless `may_exist`), and
// a real directory, not a link someone planted.
void make_directory(const std::string& path, mode_t mode, bool may_exist) {
  if (::mkdir(path.c_str(), mode) == 0) return;
  const int err = errno;
  struct stat st{};
  if (err != EEXIST || !may_exist) throw_errno("creating " + path, err);
  if (::lstat(path.c_str(), &st) < 0) throw_errno("checking " + path);
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": exists and is not a directory; remove it");
}

void create_run_dir(TestbedState& state, const Scenario& scenario) {
  make_directory(kRunRoot, 0755, true);
  make_directory(run_dir(state.name), 0700, false);
  state.scenario_path = run_dir(state.name) + "/scenario.toml";
  // The text that was parsed, not the file again: it may have changed or be a pipe.
  base::replace_file(state.scenario_path, scenario.source, 0600);
  write_state(state);
}

void mount_bpffs(const std::string& testbed) {
  const std::string dir = bpffs_dir(testbed);
  make_directory(dir, 0700, false);
  check(::mount("bpf", dir.c_str(), "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700"),
        testbed + ": mounting bpffs at " + dir);
}

pid_t start_daemon(const TestbedState& state) {
  int ready[2];
  check(::pipe2(ready, O_CLOEXEC), "creating a pipe");
  UniqueFd read_end(ready[0]), write_end(ready[1]);
  const std::string exe = self_exe();
  const std::string log = run_dir(state.name) + "/daemon.log";
  const std::string ready_fd = std::to_string(write_end.get());
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno(state.name + ": starting the daemon");
  if (pid == 0) {
    ::setsid();
    const int devnull = ::open("/dev/null", O_RDONLY);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::fcntl(write_end.get(), F_SETFD, 0);  // the daemon inherits the ready pipe
    ::execl(exe.c_str(), exe.c_str(), "daemon", "--testbed", state.name.c_str(), "--ready-fd", ready_fd.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  write_end.reset();
  // The daemon writes "ok" once its releaser listens, or an error line.
  std::string answer;
  char buf[512];
  ssize_t len;
  while ((len = ::read(read_end.get(), buf, sizeof(buf))) > 0) answer.append(buf, static_cast<size_t>(len));
  if (answer.rfind("ok", 0) != 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    if (answer.empty()) answer = "it exited without a word; see " + log;
    throw std::runtime_error(state.name + ": daemon failed: " + answer);
  }
  return pid;
}

// Exactly "EXE daemon --testbed NAME ..." as start_daemon runs it: a word-for-word
// match, so testbed "a" never takes another testbed's daemon for its own.
bool pid_is_our_daemon(pid_t pid, const std::string& testbed) {
  if (pid <= 0) return false;
  std::string cmdline;
  try {
    cmdline = base::read_regular_file(fmt::format("/proc/{}/cmdline", pid), base::ReadRules{1u << 16, true});
  } catch (const std::exception&) {
    return false;
  }
  std::vector<std::string> argv;
  std::istringstream words(cmdline);
  for (std::string word; std::getline(words, word, '\0');) argv.push_back(word);
  return argv.size() >= 4 && argv[1] == "daemon" && argv[2] == "--testbed" && argv[3] == testbed;
}

}  // namespace detail

using namespace detail;

std::string to_string(ReleasePath path) { return path == ReleasePath::fq ? "fq" : "nfqueue"; }

ReleaseChoice parse_release_choice(const std::string& text) {
  if (text == "auto") return ReleaseChoice::automatic;
  if (text == "fq") return ReleaseChoice::fq;
  if (text == "nfqueue") return ReleaseChoice::nfqueue;
  throw std::invalid_argument("--release: expected auto, fq or nfqueue, got " + base::quoted(text));
}

const Host& TestbedState::host(const std::string& host_name) const {
  for (const Host& h : hosts)
    if (h.name == host_name) return h;
  std::string known;
  for (const Host& h : hosts) known += (known.empty() ? "" : ", ") + h.name;
  throw std::runtime_error(fmt::format("{}: no host {} (hosts: {})", name, base::quoted(host_name), known));
}

std::string run_dir(const std::string& testbed) {
  // The name rule keeps the path one plain component below the run root.
  check_testbed_name(testbed, "testbed");
  return std::string(kRunRoot) + "/" + testbed;
}
std::string bpffs_dir(const std::string& testbed) { return run_dir(testbed) + "/bpf"; }
// '.' cannot appear in a testbed name, so one testbed's names never prefix another's.
std::array<std::uint8_t, 16> dc_prefix_v6(int dc) {
  return {0xfd, 0x77, 0, 0, 0, 0, static_cast<std::uint8_t>(dc >> 8), static_cast<std::uint8_t>(dc), 0, 0, 0, 0, 0, 0, 0, 0};
}

std::string core_netns(const std::string& testbed) {
  check_testbed_name(testbed, "testbed");
  return kPrefix + testbed + ".core";
}

std::string host_netns(const std::string& testbed, const std::string& host) {
  check_testbed_name(testbed, "testbed");
  if (!is_valid_host_name(host)) throw InvalidName(fmt::format("host name {}: expected <dc>-<index>", base::quoted(host)));
  return kPrefix + testbed + "." + host;
}

TestbedState testbed_up(const Scenario& scenario, const UpOptions& options) {
  TestbedState state;
  state.name = options.name.empty() ? scenario.name : options.name;
  check_testbed_name(state.name, options.name.empty() ? scenario.path + ": name" : "--name");
  if (fs::exists(run_dir(state.name)) || netns_exists(core_netns(state.name)))
    throw std::runtime_error(fmt::format("testbed \"{}\" is already up (wanlab down {})", state.name, state.name));
  for (const auto& dc : scenario.dcs) state.dcs.push_back(dc.name);
  state.hosts = plan_hosts(scenario, state.name);
  state.created_unix = ::time(nullptr);
  state.created_mono_ns = monotonic_ns();
  state.netns = core_netns(state.name);

  InterruptGuard interrupts;
  try {
    create_run_dir(state, scenario);  // from here on `down` knows the testbed
    if (scenario.host.tcp_congestion) allow_congestion_control(*scenario.host.tcp_congestion);
    mount_bpffs(state.name);

    say(options, "creating core namespace " + core_netns(state.name));
    create_netns(core_netns(state.name));
    NetnsScope in_core(core_netns(state.name));
    Rtnl core;
    core.set_up(core.link_index("lo"));
    write_sysctl("/proc/sys/net/ipv4/ip_forward", "1");
    write_sysctl("/proc/sys/net/ipv6/conf/all/forwarding", "1");
    skip_ipv6_dad_in_current_netns();
    std::tie(state.release, state.release_reason) = choose_release(options.release, core);
    say(options, "release path: " + to_string(state.release) + " (" + state.release_reason + ")");

    Datapath datapath = load_datapath(scenario, state, true);

    say(options, fmt::format("creating {} hosts", state.hosts.size()));
    for (const Host& host : state.hosts) {
      check_interrupted();
      build_host(scenario, core, host);
      attach_program(core, host, state.release, datapath.program_fd());
    }
    if (state.release == ReleasePath::nfqueue) install_nfqueue_rule(state);
    check_interrupted();
    say(options, "starting the daemon");
    state.daemon_pid = start_daemon(state);
    write_state(state);
  } catch (...) {
    testbed_down(state.name);
    throw;
  }
  return state;
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

// Daemons of testbed `name` found without its state file: processes of this
// binary whose arguments are exactly "daemon --testbed NAME".
std::vector<pid_t> daemons_of(const std::string& name) {
  std::vector<pid_t> found;
  const std::string exe = self_exe();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid_text = entry.path().filename();
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == ::getpid() || !pid_is_our_daemon(pid, name)) continue;
    std::error_code link_error;
    const std::string target = fs::read_symlink(entry.path() / "exe", link_error);
    // A binary rebuilt since `up` shows as "PATH (deleted)".
    if (!link_error && (target == exe || target == exe + " (deleted)")) found.push_back(pid);
  }
  return found;
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
  if (state && pid_is_our_daemon(state->daemon_pid, name)) attempt([&] { terminate_pids({state->daemon_pid}); });
  if (!state) attempt([&] { terminate_pids(daemons_of(name)); });
  if (state && state->kind == TestbedKind::attached) attempt([&] { detach_interface(*state); });
  // Without a readable state an attached interface cannot be named: say so.
  if (!state && !state_error.empty() && netns_exists(kPrefix + name + kAttachedSuffix))
    failures.push_back(fmt::format("{}: the state file is broken ({}), so the interface it was attached to keeps our "
                                   "filter; remove it with `tc filter del dev DEV ingress pref {}` in that namespace",
                                   name, state_error, kFilterPriority));
  for (const auto& ns : testbed_namespaces(name)) {
    // An attached testbed's namespace is the user's: we only hold a reference.
    if (!ns.ends_with(kAttachedSuffix)) attempt([&] { terminate_pids(netns_pids(ns)); });
    attempt([&] { delete_netns(ns); });
  }
  attempt([&] {
    const std::string bpf = bpffs_dir(name);
    if (::umount2(bpf.c_str(), MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
      throw_errno(name + ": unmounting " + bpf);
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
    if (!fs::exists(state_path(*explicit_name))) throw std::runtime_error("no testbed \"" + *explicit_name + "\" is up");
    return *explicit_name;
  }
  if (const char* env = std::getenv("WANLAB_TESTBED"); env && *env) {
    check_testbed_name(env, "$WANLAB_TESTBED");
    if (!fs::exists(state_path(env))) throw std::runtime_error(fmt::format("no testbed \"{}\" is up ($WANLAB_TESTBED)", env));
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

bool daemon_alive(const TestbedState& state) { return pid_is_our_daemon(state.daemon_pid, state.name); }

}  // namespace wanlab::emulator
