#include "bench_support.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "wanlab/base/files.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/rtnl.hpp"

namespace wanlab::bench {
namespace em = wanlab::emulator;
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t process_ticks(pid_t pid) {
  const auto stat = base::process_stat(pid);
  if (!stat) throw std::runtime_error(fmt::format("process {} is gone", pid));
  return stat->cpu_ticks;
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

base::Child spawn_logged(const std::vector<std::string>& argv, const std::string& log) {
  base::SpawnOptions options;
  options.stdin_fd = base::kDevNull;
  options.stdout_fd = options.stderr_fd = base::kDevNull;
  base::UniqueFd file;
  if (!log.empty()) {
    file = base::UniqueFd(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (!file) base::throw_errno("opening " + log);
    options.stdout_fd = options.stderr_fd = file.get();
  }
  return base::spawn(argv, options);
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
  const auto up = base::run_captured(up_argv);
  up_seconds_ = up.seconds;
  if (up.status != 0) {
    // A failed `up` removes what it made itself; a testbed that was up before is not ours to remove.
    throw std::runtime_error(
        fmt::format("{}: wanlab up {} exited with {}: {}", name, up_argv.at(2), up.status, trimmed(up.output)));
  }
  try {
    state_ = em::load_state(name);
  } catch (...) {
    base::run_captured({wanlab_, "down", name});
    throw;
  }
}

base::Captured Testbed::down() {
  if (down_) return {};
  down_ = true;
  return base::run_captured({wanlab_, "down", state_.name});
}

Testbed::~Testbed() {
  if (down_) return;
  try {
    const auto result = down();
    if (result.status != 0)
      fmt::print(stderr, "warning: wanlab down {} exited with {}: {}\n", state_.name, result.status,
                 trimmed(result.output));
  } catch (const std::exception& error) {
    fmt::print(stderr, "warning: wanlab down {}: {}\n", state_.name, error.what());
  }
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

}  // namespace wanlab::bench
