// The schedule benchmark (issue 14): how closely TCP goodput follows a rate
// trace, per 100 ms window, at several link rates. A two-DC testbed whose rate
// is a square wave (the rate for 500 ms, 40% of it for 500 ms), cubic streams
// across it, goodput counted at the receiver in windows aligned to the
// schedule's own clock; tracking error per window against the configured
// rate's payload share, the window one RTT after each edge on. Run by
// bench/run-trace-bench.sh.
//
//   wanlab_trace_bench --wanlab PATH [--rates 100mbit,1gbit,5gbit] [--seconds N]
//                      [--markdown FILE] [--csv-dir DIR] [--command TEXT]
//                      [--mahimahi DIR [--mahimahi-user USER]]
// --csv-dir: every window of each rate in DIR/trace-RATE.csv.
// --mahimahi: also the same square wave replayed by Mahimahi (`mm-delay 10
//   mm-link` built in DIR; setuid-root copies of them in the work directory,
//   started as USER, default nobody, since its shells refuse a root real
//   uid), measured with the same sender, receiver and windows; its windows in
//   CSV-DIR/trace-mahimahi-RATE.csv.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/sys.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/units.hpp"

namespace em = wanlab::emulator;
namespace fs = std::filesystem;
using namespace wanlab::bench;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kHalfNs = 500 * kMs;
constexpr std::uint64_t kOneWayNs = 10 * kMs;
constexpr double kLowShare = 0.4;
constexpr double kWindowS = 0.1;
constexpr double kStallS = 0.025;
// Mahimahi's link counts IP packets: a delivery opportunity is one 1500-byte
// packet (PACKET_SIZE 1504 with the TUN header), of which TCP carries 1448.
constexpr double kMahimahiPayloadShare = 1448.0 / 1500.0;
constexpr std::uint64_t kMahimahiOpportunityBits = 1500 * 8;
// The hosts' socket buffer limits, in the scenario and in Mahimahi's shells.
constexpr const char* kTcpWmemMax = "64mb";
constexpr const char* kTcpRmemMax = "128mb";

struct Config {
  std::string wanlab;
  std::vector<std::string> rates{"100mbit", "1gbit", "5gbit"};
  double seconds = 10;
  std::string markdown, csv_dir, command;
  std::string mahimahi;  // folder with mm-delay and mm-link; "" = not run
  std::string mahimahi_user = "nobody";
};

struct Window {
  double at_s;  // from the first counted window
  double configured_bps, measured_bps;
  bool settled, stalled;
};

struct RateResult {
  std::string emulator;  // "wanlab" | "mahimahi"
  std::string rate;
  int streams = 1;
  double payload_share = em::kPayloadShare;  // of the configured rate
  std::vector<Window> windows;
  std::string unable;  // why there is no tracking error to show; "" = there is
};

// Goodput per window as a share of the configured payload rate.
double tracking_ratio(const RateResult& result, const Window& w) {
  return w.measured_bps / (w.configured_bps * result.payload_share);
}

std::string scenario_text(const std::string& rate, std::uint64_t bps) {
  return fmt::format(R"(name = "bench-trace"
[defaults]
delay = "10ms"
rate = "{0}"
queue = "4bdp"
schedule = {{ period = "{2}ms", steps = [{{ time = "0s", rate = "{0}" }}, {{ time = "{3}ms", rate = "{1}" }}] }}
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "{4}"
tcp_rmem_max = "{5}"
[[dc]]
name = "east"
[[dc]]
name = "west"
)",
                     rate, em::units::format_rate(static_cast<std::uint64_t>(static_cast<double>(bps) * kLowShare)),
                     2 * kHalfNs / kMs, kHalfNs / kMs, kTcpWmemMax, kTcpRmemMax);
}

int streams_at(std::uint64_t bps) { return bps >= 1'000'000'000 ? 4 : 1; }

// Cubic streams across the link, goodput counted at the receiver in windows
// of the schedule's clock: `origin_ns` (CLOCK_MONOTONIC) is a time the square
// wave's high half starts at the sender's end of the link.
RateResult measure_windows(const Config& config, const std::string& emulator, const std::string& rate,
                           std::uint64_t origin_ns, const em::Endpoint& from, const em::Endpoint& to) {
  const std::uint64_t bps = em::units::parse_rate(rate);
  // Receiver time: the schedule's plus the one-way delay; counted from a
  // period's start 3 s on (slow start, cubic finding the queue).
  const std::uint64_t origin = origin_ns + kOneWayNs;
  const std::uint64_t earliest = static_cast<std::uint64_t>(wanlab::base::monotonic_ns()) + 3000 * kMs;
  em::GoodputOptions options;
  options.count_from_mono_ns = origin + (earliest - origin + 2 * kHalfNs - 1) / (2 * kHalfNs) * (2 * kHalfNs);
  options.seconds = config.seconds;
  options.congestion = "cubic";
  options.streams = streams_at(bps);
  const em::GoodputReport report = em::measure_goodput(from, to, options, kWindowS);
  RateResult result{emulator, rate, options.streams, em::kPayloadShare, {}, {}};
  const std::uint64_t rtt = 2 * kOneWayNs;
  for (std::size_t w = 0; w < report.interval_bps.size(); ++w) {
    const std::uint64_t begin = static_cast<std::uint64_t>(static_cast<double>(w) * kWindowS * 1e9);
    const bool high = begin / kHalfNs % 2 == 0;
    const std::uint64_t in_half = begin % kHalfNs;
    Window window;
    window.at_s = static_cast<double>(w) * kWindowS;
    window.configured_bps = static_cast<double>(bps) * (high ? 1.0 : kLowShare);
    window.measured_bps = report.interval_bps[w];
    window.settled = in_half >= rtt && in_half + 100 * kMs <= kHalfNs;
    window.stalled = report.interval_max_gap_s[w] > kStallS || (w > 0 && report.interval_max_gap_s[w - 1] > kStallS);
    result.windows.push_back(window);
  }
  return result;
}

RateResult measure(const Config& config, const std::string& work, const std::string& rate) {
  const std::uint64_t bps = em::units::parse_rate(rate);
  const std::string path = work + "/bench-trace.toml";
  wanlab::base::replace_file(path, scenario_text(rate, bps));
  Testbed bed(config.wanlab, path, "bench-trace");
  const auto schedule = em::Datapath::open_pinned(em::bpffs_dir(bed.name())).schedule(0, 1);
  if (schedule.empty()) throw std::runtime_error("the testbed has no schedule");
  const em::Host from = bed.host_of_dc(0), to = bed.host_of_dc(1);
  return measure_windows(config, "wanlab", rate, schedule[0].head.start_ns, em::Endpoint{from.netns, from.ipv4},
                         em::Endpoint{to.netns, to.ipv4});
}

// The square wave as a Mahimahi trace: one line per delivery opportunity (a
// 1500-byte packet), in ms from the trace's start; the opportunities of
// (m-1, m] ms at line "m", which mm-link serves from ms m on. Mahimahi repeats
// the trace with its last line's time as the period, so every ms of the low
// half needs an opportunity (a low rate of 12 Mbit/s or more); the fraction of
// an opportunity left at a period's end is dropped (under 1 in 5,000 at 100
// Mbit/s).
std::string mahimahi_trace(std::uint64_t bps) {
  const std::uint64_t half_ms = kHalfNs / kMs;
  const auto low_bps = static_cast<std::uint64_t>(static_cast<double>(bps) * kLowShare);
  if (low_bps / 1000 < kMahimahiOpportunityBits)
    throw std::runtime_error(
        fmt::format("a Mahimahi trace needs a low rate of 12 Mbit/s or more, not {} bit/s", low_bps));
  std::string text;
  std::uint64_t bits_ms = 0;  // capacity so far, in bit x ms / s
  std::uint64_t given = 0;    // opportunities so far
  for (std::uint64_t ms = 1; ms <= 2 * half_ms; ++ms) {
    bits_ms += ms <= half_ms ? bps : low_bps;
    for (; given < bits_ms / 1000 / kMahimahiOpportunityBits; ++given) text += fmt::format("{}\n", ms);
  }
  return text;
}

// CLOCK_REALTIME and CLOCK_MONOTONIC read together, in ns.
std::pair<std::uint64_t, std::uint64_t> realtime_and_monotonic_ns() {
  timespec real{}, mono{};
  ::clock_gettime(CLOCK_REALTIME, &real);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  auto ns = [](const timespec& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<std::uint64_t>(t.tv_nsec);
  };
  return {ns(real), ns(mono)};
}

// Sets a sysctl until destroyed (and on a signal), then puts the old value back.
class SysctlOverride {
 public:
  SysctlOverride(std::string path, const std::string& value) : path_(std::move(path)) {
    std::ifstream in(path_);
    std::getline(in, old_);
    if (!in) throw std::runtime_error(path_ + ": cannot read");
    write(value);
    cleanup_ = on_signal([path = path_, old = old_] { std::ofstream(path) << old << "\n"; });
  }
  ~SysctlOverride() {
    forget_on_signal(cleanup_);
    std::ofstream(path_) << old_ << "\n";
  }
  SysctlOverride(const SysctlOverride&) = delete;
  SysctlOverride& operator=(const SysctlOverride&) = delete;

 private:
  void write(const std::string& value) const {
    std::ofstream out(path_);
    out << value << "\n";
    out.flush();
    if (!out) throw std::runtime_error(path_ + ": cannot write " + value);
  }
  std::string path_, old_;
  int cleanup_ = -1;
};

// `mm-delay 10 mm-link UP DOWN --*-queue=droptail --*-queue-args=bytes=N --
// sh` started as an unprivileged user (Mahimahi's shells must be setuid root
// and refuse a root real uid), the inner shell's network namespace and the
// outside one named for measure_goodput, and the time the uplink trace
// starts. Ends the shells and drops the names when destroyed, or on a signal.
class MahimahiShell {
 public:
  MahimahiShell(const Config& config, const std::string& work, std::uint64_t bps) {
    const passwd* user = ::getpwnam(config.mahimahi_user.c_str());
    if (!user) throw std::runtime_error("--mahimahi-user: no user \"" + config.mahimahi_user + "\"");
    if (user->pw_uid == 0 || user->pw_gid == 0)
      throw std::runtime_error("--mahimahi-user: Mahimahi refuses uid or gid 0, and \"" + config.mahimahi_user +
                               "\" has one");
    // Readable by that user: the work directory is root's 0700.
    const std::string dir = work + "/mahimahi";
    fs::create_directories(dir);
    fs::permissions(work, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                             fs::perms::others_exec);
    // Setuid-root copies, as `make install` would leave them, so the build's
    // own files stay as they are.
    for (const char* name : {"mm-delay", "mm-link"}) {
      const std::string copy = dir + "/" + name;
      fs::copy_file(config.mahimahi + "/" + name, copy, fs::copy_options::overwrite_existing);
      if (::chown(copy.c_str(), 0, 0) < 0) wanlab::base::throw_errno("chown " + copy);
      if (::chmod(copy.c_str(), 04755) < 0) wanlab::base::throw_errno("chmod " + copy);
    }
    const std::string trace = mahimahi_trace(bps);
    const std::string up = dir + "/up.fifo", down = dir + "/down.trace", log = dir + "/shell.log";
    wanlab::base::replace_file(down, trace);
    fs::permissions(down,
                    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
    fs::remove(up);
    if (::mkfifo(up.c_str(), 0644) < 0) wanlab::base::throw_errno("mkfifo " + up);
    fs::remove(log);
    // A queue of 4 BDP at the high rate and the 20 ms RTT, in bytes.
    const std::uint64_t queue_bytes = bps / 8 * 4 * 2 * kOneWayNs / 1'000'000'000;
    const std::string queue_args = fmt::format("bytes={}", queue_bytes);
    cleanup_ = on_signal([this] { stop(); });
    try {
      shell_ = spawn_command(
          {"/usr/bin/setpriv", fmt::format("--reuid={}", user->pw_uid), fmt::format("--regid={}", user->pw_gid),
           "--clear-groups", "--", dir + "/mm-delay", std::to_string(kOneWayNs / kMs), dir + "/mm-link", up, down,
           "--uplink-queue=droptail", "--uplink-queue-args=" + queue_args, "--downlink-queue=droptail",
           "--downlink-queue-args=" + queue_args, "--", "/bin/sh", "-c",
           // Gone by itself a while after the run should have ended.
           fmt::format("echo \"ready $$ $MAHIMAHI_BASE\"; exec sleep {:.0f}", config.seconds + 120)},
          log);
      start_trace(up, trace, log);
      wait_ready(log);
      name_namespaces();
      // The sender's socket buffers as in the wanlab testbed's hosts.
      em::NetnsScope in_inner(inner_name_);
      em::write_sysctl("/proc/sys/net/ipv4/tcp_wmem", fmt::format("4096 16384 {}", em::units::parse_size(kTcpWmemMax)));
      em::write_sysctl("/proc/sys/net/ipv4/tcp_rmem",
                       fmt::format("4096 131072 {}", em::units::parse_size(kTcpRmemMax)));
    } catch (...) {
      forget_on_signal(cleanup_);
      stop();
      throw;
    }
  }
  ~MahimahiShell() {
    forget_on_signal(cleanup_);
    stop();
  }
  MahimahiShell(const MahimahiShell&) = delete;
  MahimahiShell& operator=(const MahimahiShell&) = delete;

  em::Endpoint inside() const { return {inner_name_, 0}; }
  em::Endpoint outside() const { return {outer_name_, base_ipv4_}; }
  // CLOCK_MONOTONIC of the trace's time 0.
  std::uint64_t origin_ns() const { return origin_ns_; }

 private:
  // The uplink trace goes through a FIFO: mm-link opens it just after taking
  // its base timestamp (CLOCK_REALTIME, whole ms), so the open tells when the
  // trace starts without its per-packet log.
  void start_trace(const std::string& fifo, const std::string& trace, const std::string& log) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    wanlab::base::UniqueFd fd;
    while (true) {
      fd = wanlab::base::UniqueFd(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
      if (fd) break;
      if (errno != ENXIO) wanlab::base::throw_errno("opening " + fifo);
      if (exited() || std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("mm-link never read its trace: " + tail_of(log));
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const auto [real, mono] = realtime_and_monotonic_ns();
    origin_ns_ = mono - real % kMs;
    ::fcntl(fd.get(), F_SETFL, 0);
    for (std::size_t done = 0; done < trace.size();) {
      const ssize_t n = ::write(fd.get(), trace.data() + done, trace.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) wanlab::base::throw_errno("writing " + fifo);
      done += static_cast<std::size_t>(n);
    }
  }

  void wait_ready(const std::string& log) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (true) {
      std::ifstream in(log);
      for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string word, base;
        if (words >> word && word == "ready" && words >> inner_pid_ >> base) {
          in_addr address{};
          if (::inet_pton(AF_INET, base.c_str(), &address) != 1)
            throw std::runtime_error("MAHIMAHI_BASE \"" + base + "\" is not an IPv4 address");
          base_ipv4_ = ntohl(address.s_addr);
          return;
        }
      }
      if (exited() || std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("the Mahimahi shell did not start: " + tail_of(log));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void name_namespaces() {
    inner_name_ = fmt::format("wanlab-mm-{}.inner", shell_);
    outer_name_ = fmt::format("wanlab-mm-{}.outer", shell_);
    em::name_current_netns(outer_name_);
    const std::string path = fmt::format("/proc/{}/ns/net", inner_pid_);
    wanlab::base::UniqueFd inner(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!inner) wanlab::base::throw_errno("opening " + path);
    em::NetnsScope in_inner(inner.get());
    em::name_current_netns(inner_name_);
  }

  bool exited() {
    if (shell_ <= 0) return true;
    int status = 0;
    if (::waitpid(shell_, &status, WNOHANG) != shell_) return false;
    shell_ = 0;
    return true;
  }

  // Ends the inner shell (mm-link and mm-delay then exit), waits for
  // mm-delay, and drops the names; a shell that stays is sent SIGTERM, then SIGKILL.
  void stop() {
    if (inner_pid_ > 0) ::kill(inner_pid_, SIGTERM);
    inner_pid_ = 0;
    for (int sig : {0, SIGTERM, SIGKILL}) {
      if (shell_ <= 0) break;
      if (sig != 0) ::kill(shell_, sig);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!exited() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (const std::string& name : {inner_name_, outer_name_})
      if (!name.empty()) em::delete_netns(name);
    inner_name_.clear();
    outer_name_.clear();
  }

  static std::string tail_of(const std::string& log) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.size() > 400) text = "..." + text.substr(text.size() - 400);
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text.empty() ? "(no output)" : text;
  }

  pid_t shell_ = 0;
  pid_t inner_pid_ = 0;
  std::uint32_t base_ipv4_ = 0;
  std::uint64_t origin_ns_ = 0;
  std::string inner_name_, outer_name_;
  int cleanup_ = -1;
};

// A settled high window's goodput below this share of the configured payload
// rate, at the median, means the emulator could not carry the rate at all:
// its tracking error would measure its ceiling, not the trace.
constexpr double kCarriedShare = 0.8;

RateResult measure_mahimahi(const Config& config, const std::string& work, const std::string& rate) {
  const std::uint64_t bps = em::units::parse_rate(rate);
  RateResult result{"mahimahi", rate, streams_at(bps), kMahimahiPayloadShare, {}, {}};
  try {
    // Mahimahi checks forwarding; the receiver outside gets the testbed hosts' buffers.
    SysctlOverride forwarding("/proc/sys/net/ipv4/ip_forward", "1");
    SysctlOverride wmem("/proc/sys/net/ipv4/tcp_wmem",
                        fmt::format("4096 16384 {}", em::units::parse_size(kTcpWmemMax)));
    SysctlOverride rmem("/proc/sys/net/ipv4/tcp_rmem",
                        fmt::format("4096 131072 {}", em::units::parse_size(kTcpRmemMax)));
    MahimahiShell shell(config, work, bps);
    const CpuMeter cpu(::getpid());
    result = measure_windows(config, "mahimahi", rate, shell.origin_ns(), shell.inside(), shell.outside());
    const double busy = cpu.read().system_pct_of_all;
    result.payload_share = kMahimahiPayloadShare;
    std::vector<double> high, low;  // settled windows' goodput
    for (const Window& w : result.windows)
      if (w.settled) (w.configured_bps == static_cast<double>(bps) ? high : low).push_back(w.measured_bps);
    auto median_of = [](const std::vector<double>& v) { return v.empty() ? 0.0 : em::median(v); };
    const double payload_bps = static_cast<double>(bps) * kMahimahiPayloadShare;
    if (median_of(high) < kCarriedShare * payload_bps)
      result.unable = fmt::format(
          "Mahimahi did not carry {}: goodput in the high half's settled windows {:.0f} Mbit/s at the median against "
          "{:.0f} configured (payload), in the low half's {:.0f} against {:.0f}, the machine's CPUs {:.0f}% busy; "
          "mm-link and mm-delay move every packet through TUN devices in userspace",
          rate, median_of(high) / 1e6, payload_bps / 1e6, median_of(low) / 1e6, kLowShare * payload_bps / 1e6, busy);
  } catch (const std::exception& error) {
    result.windows.clear();
    result.unable = fmt::format("Mahimahi did not run at {}: {}", rate, error.what());
  }
  return result;
}

double percentile_of(std::vector<double> values, double p) {
  return values.empty() ? std::nan("") : em::percentile(std::move(values), p);
}

std::vector<std::string> row_of(const RateResult& result) {
  if (!result.unable.empty()) {
    const auto settled =
        std::count_if(result.windows.begin(), result.windows.end(), [](const Window& w) { return w.settled; });
    return {result.emulator,
            result.rate,
            std::to_string(result.streams),
            std::to_string(settled),
            "-",
            "no: see note",
            "-",
            "-",
            "-",
            "-",
            "-"};
  }
  std::vector<double> errors, all_errors;
  int stalled = 0, within = 0;
  for (const Window& w : result.windows) {
    if (!w.settled) continue;
    const double error = std::abs(tracking_ratio(result, w) - 1);
    all_errors.push_back(error);
    if (w.stalled) {
      ++stalled;
      continue;
    }
    errors.push_back(error);
    within += error <= 0.05;
  }
  auto pct = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.1f}%", 100 * v); };
  return {result.emulator,
          result.rate,
          std::to_string(result.streams),
          std::to_string(all_errors.size()),
          std::to_string(stalled),
          pct(em::mean(errors)),
          pct(percentile_of(errors, 50)),
          pct(percentile_of(errors, 90)),
          pct(percentile_of(errors, 100)),
          fmt::format("{} of {}", within, errors.size()),
          pct(percentile_of(all_errors, 90))};
}

Config parse_args(int argc, char** argv) {
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": needs a value");
      return argv[++i];
    };
    if (arg == "--wanlab") {
      config.wanlab = fs::absolute(value()).string();
    } else if (arg == "--rates") {
      config.rates.clear();
      std::stringstream list(value());
      for (std::string rate; std::getline(list, rate, ',');) {
        em::units::parse_rate(rate);  // a bad one fails here, before any testbed
        config.rates.push_back(rate);
      }
    } else if (arg == "--seconds") {
      config.seconds = wanlab::base::parse_decimal(value(), 2, 3600);
    } else if (arg == "--markdown") {
      config.markdown = output_file_option(arg, value());
    } else if (arg == "--csv-dir") {
      config.csv_dir = value();
    } else if (arg == "--command") {
      config.command = value();
    } else if (arg == "--mahimahi") {
      config.mahimahi = fs::absolute(value()).string();
    } else if (arg == "--mahimahi-user") {
      config.mahimahi_user = value();
    } else {
      throw std::invalid_argument("unknown argument \"" + arg +
                                  "\" (--wanlab PATH, --rates LIST, --seconds N, --markdown FILE, --csv-dir DIR, "
                                  "--command TEXT, --mahimahi DIR, --mahimahi-user USER)");
    }
  }
  if (::access(config.wanlab.c_str(), X_OK) != 0)
    throw std::invalid_argument("--wanlab: \"" + config.wanlab + "\" is not an executable (build the wanlab target)");
  if (!config.mahimahi.empty())
    for (const char* name : {"mm-delay", "mm-link"})
      if (::access((config.mahimahi + "/" + name).c_str(), X_OK) != 0)
        throw std::invalid_argument("--mahimahi: no executable " + config.mahimahi + "/" + name);
  return config;
}

void write_csv(const wanlab::base::OutputDir& dir, const std::string& name, const RateResult& result) {
  dir.write(name, [&](std::ostream& out) {
  out << "time_s,configured_mbit,measured_mbit,settled,stalled\n";
  for (const Window& w : result.windows)
    out << fmt::format("{:.1f},{:.3f},{:.3f},{},{}\n", w.at_s, w.configured_bps * result.payload_share / 1e6,
                       w.measured_bps / 1e6, w.settled ? 1 : 0, w.stalled ? 1 : 0);
  });
}

int run(int argc, char** argv) {
  const Config config = parse_args(argc, argv);
  if (::geteuid() != 0) throw std::runtime_error("needs root (namespaces, tc, iptables)");
  install_signal_cleanup(config.wanlab);
  WorkDir work("wanlab-trace-bench");
  remove_on_signal(work.path);
  const std::string load_start = load_average();
  std::vector<RateResult> results;
  for (const std::string& rate : config.rates) {
    results.push_back(measure(config, work.path, rate));
    if (!config.mahimahi.empty()) results.push_back(measure_mahimahi(config, work.path, rate));
  }

  Table table;
  table.title = fmt::format("Goodput against a square-wave rate trace, per 100 ms window ({})", now_text());
  table.header = {"emulator",  "rate",      "streams",   "windows",   "host stalled",     "error mean",
                  "error p50", "error p90", "error max", "within 5%", "p90 incl. stalled"};
  for (const RateResult& result : results) table.rows.push_back(row_of(result));
  table.notes = {
      fmt::format("Square wave: the rate for {0} ms, {1:.0f}% of it for {0} ms; delay 10 ms each way, queue 4 BDP "
                  "at the rate, cubic; wanlab's nfqueue release path unless the kernel has sch_fq.",
                  kHalfNs / kMs, 100 * kLowShare),
      "Error: |goodput / (configured x payload share) - 1| per 100 ms window of the schedule's clock at the "
      "receiver, windows from one RTT after an edge to the next edge; mean, p50, p90 and max over the windows "
      "the host did not stall. Payload share: 1448/1514 for wanlab (its rate counts Ethernet frames), 1448/1500 "
      "for Mahimahi (a trace line is one 1500-byte IP packet).",
      "Host stalled: the receiver got no byte for 25 ms in or just before the window (the host did not run the "
      "receiver, sender or releaser); those windows are counted apart.",
      fmt::format("Load average at start {}, at end {}.", load_start, load_average())};
  if (config.mahimahi.empty()) {
    table.notes.push_back("Mahimahi's own replay is not beside it: run without --mahimahi.");
  } else {
    table.notes.push_back(
        fmt::format("Mahimahi: `mm-delay 10 mm-link UP DOWN` with droptail queues of 4 BDP in bytes, started as {}; "
                    "the trace is one 1500-byte delivery opportunity a line, the capacity of each ms on its own "
                    "line, looping every {} ms. Windows start from the uplink trace's time 0, read when mm-link "
                    "opens it (a FIFO) as the start of that CLOCK_REALTIME ms, Mahimahi's own clock: up to 1 ms "
                    "off, and mm-link serves each ms's line from that ms on, about 1 ms after wanlab would.",
                    config.mahimahi_user, 2 * kHalfNs / kMs));
    for (const RateResult& result : results)
      if (!result.unable.empty()) table.notes.push_back(result.unable + ".");
  }
  if (!config.command.empty()) table.notes.push_back("Command: " + config.command);
  fmt::print("{}\n", table.text());
  if (!config.markdown.empty()) wanlab::base::write_output_file(config.markdown, table.markdown());
  if (!config.csv_dir.empty()) {
    const auto dir = wanlab::base::OutputDir::open(config.csv_dir);
    for (const RateResult& result : results)
      if (!result.windows.empty())
        write_csv(dir, (result.emulator == "wanlab" ? "trace-" : "trace-mahimahi-") + result.rate + ".csv", result);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return wanlab::bench::main_of("wanlab_trace_bench", run, argc, argv); }
