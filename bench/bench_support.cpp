#include "bench_support.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/sys.hpp"

extern char** environ;

namespace wanlab::bench {
namespace em = wanlab::emulator;
namespace {

using Clock = std::chrono::steady_clock;

// Testbeds up now, for the signal cleanup.
std::mutex registry_mutex;
std::set<std::string> registry;
std::atomic<pid_t> running_child{0};
std::string cleanup_wanlab;
std::vector<std::string> cleanup_dirs;                 // under registry_mutex
std::map<int, std::function<void()>> cleanup_actions;  // under registry_mutex
int next_cleanup_action = 0;                           // under registry_mutex

void register_testbed(const std::string& name) {
  std::lock_guard lock(registry_mutex);
  registry.insert(name);
}

void unregister_testbed(const std::string& name) {
  std::lock_guard lock(registry_mutex);
  registry.erase(name);
}

void wait_for_signal_then_clean_up(sigset_t signals) {
  int sig = 0;
  if (sigwait(&signals, &sig) != 0) return;
  fmt::print(stderr, "\nsignal {}: taking the benchmark's testbeds down\n", sig);
  // A `wanlab up` under way got the same signal and undoes itself; let it finish.
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (running_child.load() > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::set<std::string> names;
  {
    std::lock_guard lock(registry_mutex);
    names = registry;
  }
  for (const auto& name : names) {
    const auto down = run_command({cleanup_wanlab, "down", name});
    fmt::print(stderr, "{}", down.output);
  }
  std::map<int, std::function<void()>> actions;
  std::vector<std::string> dirs;
  {
    std::lock_guard lock(registry_mutex);
    actions = cleanup_actions;
    dirs = cleanup_dirs;
  }
  for (auto it = actions.rbegin(); it != actions.rend(); ++it) {  // the latest first
    try {
      it->second();
    } catch (const std::exception& error) {
      fmt::print(stderr, "cleanup: {}\n", error.what());
    }
  }
  for (const auto& dir : dirs) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  ::_exit(128 + sig);
}

std::uint64_t process_ticks(pid_t pid) {
  const std::string stat = base::read_kernel_file(fmt::format("/proc/{}/stat", pid));
  // Fields after the command name, which may hold spaces: ") state ppid ...".
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  std::uint64_t utime = 0, stime = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14) utime = std::stoull(field);
    if (index == 15) {
      stime = std::stoull(field);
      break;
    }
  }
  return utime + stime;
}

// The "cpu" line of /proc/stat sums all CPUs: user nice system idle iowait irq
// softirq steal (guest time is inside user).
void system_ticks(std::uint64_t& busy, std::uint64_t& total, std::uint64_t& softirq, std::uint64_t& steal) {
  std::istringstream lines(base::read_kernel_file("/proc/stat"));
  std::string cpu;
  lines >> cpu;
  std::uint64_t value = 0;
  busy = total = softirq = steal = 0;
  for (int index = 0; index < 8 && lines >> value; ++index) {
    total += value;
    if (index != 3 && index != 4) busy += value;
    if (index == 6) softirq = value;
    if (index == 7) steal = value;
  }
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

namespace {

// Starts argv with `actions`; the child gets default signal dispositions and
// an empty signal mask whatever ours are.
pid_t spawn_with(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* actions) {
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> c_argv;
  for (const auto& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error = posix_spawn(&pid, c_argv[0], actions, &attributes, c_argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  if (spawn_error != 0) base::throw_errno("starting " + argv[0], spawn_error);
  return pid;
}

}  // namespace

pid_t spawn_command(const std::vector<std::string>& argv, const std::string& output_path) {
  const std::string output = output_path.empty() ? "/dev/null" : output_path;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  try {
    const pid_t pid = spawn_with(argv, &actions);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  } catch (...) {
    posix_spawn_file_actions_destroy(&actions);
    throw;
  }
}

CommandResult run_command(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  base::check(::pipe2(pipe_fds, O_CLOEXEC), "creating a pipe");
  base::UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDERR_FILENO);
  const auto start = Clock::now();
  pid_t pid = 0;
  try {
    pid = spawn_with(argv, &actions);
  } catch (...) {
    posix_spawn_file_actions_destroy(&actions);
    throw;
  }
  posix_spawn_file_actions_destroy(&actions);
  running_child = pid;
  write_end.reset();

  CommandResult result;
  char buf[4096];
  for (ssize_t len; (len = ::read(read_end.get(), buf, sizeof(buf))) != 0;) {
    if (len < 0 && errno == EINTR) continue;
    if (len < 0) break;
    result.output.append(buf, static_cast<size_t>(len));
  }
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  running_child = 0;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  auto seconds_of = [](const timeval& time) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
  };
  result.cpu_seconds = seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
  result.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  return result;
}

void install_signal_cleanup(const std::string& wanlab_binary) {
  cleanup_wanlab = wanlab_binary;
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, sig);
  // Blocked here, so in every thread started later; only the waiter takes them.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread(wait_for_signal_then_clean_up, signals).detach();
}

void remove_on_signal(const std::string& directory) {
  std::lock_guard lock(registry_mutex);
  cleanup_dirs.push_back(directory);
}

int on_signal(std::function<void()> action) {
  std::lock_guard lock(registry_mutex);
  cleanup_actions.emplace(next_cleanup_action, std::move(action));
  return next_cleanup_action++;
}

void forget_on_signal(int id) {
  std::lock_guard lock(registry_mutex);
  cleanup_actions.erase(id);
}

std::string scenario_toml(const ScenarioSpec& spec) {
  std::string text =
      fmt::format("name = \"{}\"\n\n[defaults]\ndelay = \"{}\"\nqueue = \"{}\"\n", spec.name, spec.delay, spec.queue);
  if (spec.rate) text += fmt::format("rate = \"{}\"\n", *spec.rate);
  text += fmt::format("\n[host]\ntcp_congestion = \"{}\"\ntcp_wmem_max = \"{}\"\ntcp_rmem_max = \"{}\"\n",
                      spec.congestion, spec.wmem_max, spec.rmem_max);
  if (spec.slow_start_after_idle) text += fmt::format("tcp_slow_start_after_idle = {}\n", *spec.slow_start_after_idle);
  for (int dc = 0; dc < spec.dcs; ++dc) text += fmt::format("\n[[dc]]\nname = \"d{}\"\nhosts = 1\n", dc);
  return text;
}

Testbed::Testbed(const std::string& wanlab_binary, const std::string& work_dir, const ScenarioSpec& spec)
    : wanlab_(wanlab_binary) {
  const std::string path = work_dir + "/" + spec.name + ".toml";
  wanlab::base::replace_file(path, scenario_toml(spec));
  bring_up({wanlab_, "up", path, "--quiet"}, spec.name);
}

Testbed::Testbed(const std::string& wanlab_binary, const std::string& scenario_path, const std::string& name)
    : wanlab_(wanlab_binary) {
  bring_up({wanlab_, "up", scenario_path, "--name", name, "--quiet"}, name);
}

void Testbed::bring_up(const std::vector<std::string>& up_argv, const std::string& name) {
  register_testbed(name);
  const auto up = run_command(up_argv);
  up_seconds_ = up.seconds;
  if (up.status != 0) {
    // A failed `up` removes what it made itself; a testbed that was up before is not ours to remove.
    unregister_testbed(name);
    throw std::runtime_error(
        fmt::format("{}: wanlab up {} exited with {}: {}", name, up_argv.at(2), up.status, trimmed(up.output)));
  }
  try {
    state_ = em::load_state(name);
  } catch (...) {
    run_command({wanlab_, "down", name});
    unregister_testbed(name);
    throw;
  }
}

CommandResult Testbed::down() {
  if (down_) return {};
  down_ = true;
  auto result = run_command({wanlab_, "down", state_.name});
  unregister_testbed(state_.name);
  return result;
}

Testbed::~Testbed() {
  if (down_) return;
  const auto result = down();
  if (result.status != 0)
    fmt::print(stderr, "warning: wanlab down {} exited with {}: {}\n", state_.name, result.status,
               trimmed(result.output));
}

// The nfqueue path stamps packets on the way in; the fq path on the way out,
// where fq enforces the time.
bool Testbed::program_at_ingress() const { return state_.release == em::ReleasePath::nfqueue; }

em::Host Testbed::host_of_dc(int dc) const {
  for (const auto& host : state_.hosts)
    if (host.dc_index == dc) return host;
  throw std::out_of_range(fmt::format("{}: no host in DC {}", state_.name, dc));
}

void Testbed::set_link(int a, int b, const std::vector<std::pair<std::string, std::string>>& fields) const {
  em::Change change;
  change.from = state_.dcs.at(static_cast<std::size_t>(a));
  change.to = state_.dcs.at(static_cast<std::size_t>(b));
  change.symmetric = true;
  change.fields = fields;
  em::apply_change(state_, change);
}

void Testbed::detach_programs() const {
  em::NetnsScope in_core(em::core_netns(state_.name));
  em::Rtnl core;
  for (const auto& host : state_.hosts)
    core.delete_bpf_filters(core.link_index(host.core_ifname), program_at_ingress());
}

void Testbed::attach_programs() const {
  const std::string pin = em::bpffs_dir(state_.name) + "/wanlab_tc";
  base::UniqueFd program(bpf_obj_get(pin.c_str()));
  if (!program) base::throw_errno(state_.name + ": opening the pinned program " + pin);
  em::NetnsScope in_core(em::core_netns(state_.name));
  em::Rtnl core;
  for (const auto& host : state_.hosts)
    core.add_bpf_filter(core.link_index(host.core_ifname), program_at_ingress(), program.get(), "wanlab_tc");
}

CpuMeter::CpuMeter(pid_t process) : process_(process), start_(Clock::now()), process_ticks_(process_ticks(process)) {
  system_ticks(system_busy_, system_total_, system_softirq_, system_steal_);
}

CpuMeter::Usage CpuMeter::read() const {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const double ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::uint64_t busy = 0, total = 0, softirq = 0, steal = 0;
  system_ticks(busy, total, softirq, steal);
  Usage usage;
  usage.seconds = seconds;
  usage.process_pct_of_core =
      100.0 * static_cast<double>(process_ticks(process_) - process_ticks_) / ticks_per_second / seconds;
  if (total > system_total_) {
    const double elapsed = static_cast<double>(total - system_total_);
    usage.system_pct_of_all = 100.0 * static_cast<double>(busy - system_busy_) / elapsed;
    usage.softirq_pct_of_all = 100.0 * static_cast<double>(softirq - system_softirq_) / elapsed;
    usage.steal_pct_of_all = 100.0 * static_cast<double>(steal - system_steal_) / elapsed;
  }
  return usage;
}

em::ReleaserStats read_releaser_counters(const std::string& testbed) {
  return em::read_releaser_stats_if_present(em::releaser_stats_path(testbed)).value_or(em::ReleaserStats{});
}

PairCounters read_pair_counters(const std::string& testbed, int src, int dst) {
  const auto datapath = em::Datapath::open_pinned(em::bpffs_dir(testbed));
  const wanlab_pair_stats stats = datapath.stats(src, dst);
  return PairCounters{stats.packets, stats.bytes, stats.drops[WANLAB_DROP_QUEUE]};
}

MachineInfo machine_info() {
  MachineInfo info;
  utsname names{};
  if (::uname(&names) == 0) info.kernel = fmt::format("{} {} {}", names.sysname, names.release, names.machine);
  info.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      info.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  if (meminfo >> key >> kib && key == "MemTotal:") info.memory_gib = kib / (1024.0 * 1024.0);
  return info;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

std::string now_text() {
  const std::time_t now = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  return text;
}

WorkDir::WorkDir(const std::string& prefix) {
  std::string pattern = "/tmp/" + prefix + ".XXXXXX";
  if (!::mkdtemp(pattern.data())) base::throw_errno("creating a work directory under /tmp");
  path = pattern;
}

WorkDir::~WorkDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::string Table::text() const {
  std::vector<std::size_t> widths(header.size(), 0);
  auto widen = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], cells[i].size());
  };
  widen(header);
  for (const auto& row : rows) widen(row);
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t i = 0; i < widths.size(); ++i)
      out += fmt::format("{}{:<{}}", i ? "  " : "", i < cells.size() ? cells[i] : "", widths[i]);
    return trimmed(out) + "\n";
  };
  std::string out = title + "\n" + line(header);
  std::size_t total = 0;
  for (auto w : widths) total += w + 2;
  out += std::string(total - 2, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  for (const auto& note : notes) out += "  " + note + "\n";
  return out;
}

std::string Table::markdown() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const auto& cell : cells) out += " " + cell + " |";
    return out + "\n";
  };
  std::string out = "### " + title + "\n\n" + line(header) + "|";
  for (std::size_t i = 0; i < header.size(); ++i) out += " --- |";
  out += "\n";
  for (const auto& row : rows) out += line(row);
  if (!notes.empty()) out += "\n";
  for (const auto& note : notes) out += "- " + note + "\n";
  return out;
}

std::string verdict(bool pass) { return pass ? "PASS" : "MISS"; }

std::string output_file_option(const std::string& option, const std::string& path) {
  try {
    base::check_output_file(path);
  } catch (const base::FileError& error) {
    throw std::invalid_argument(option + ": " + error.what());
  }
  return path;
}

int main_of(const char* name, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "{}: {}\n", name, error.what());
    return 1;
  }
}

}  // namespace wanlab::bench
