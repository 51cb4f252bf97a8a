#include "trace/mahimahi.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bench_support.hpp"
#include "trace/square_wave.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/sys.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::bench::trace {
namespace em = wanlab::emulator;
namespace fs = std::filesystem;

// One line per delivery opportunity (a 1500-byte packet), in ms from the
// trace's start; the opportunities of (m-1, m] ms at line "m", which mm-link
// serves from ms m on. Mahimahi repeats the trace with its last line's time
// as the period, so every ms of the low half needs an opportunity (a low rate
// of 12 Mbit/s or more); the fraction of an opportunity left at a period's
// end is dropped (under 1 in 5,000 at 100 Mbit/s).
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

SysctlOverride::SysctlOverride(std::string path, const std::string& value) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::getline(in, old_);
  if (!in) throw std::runtime_error(path_ + ": cannot read");
  write(value);
}

SysctlOverride::~SysctlOverride() { std::ofstream(path_) << old_ << "\n"; }

void SysctlOverride::write(const std::string& value) const {
  std::ofstream out(path_);
  out << value << "\n";
  out.flush();
  if (!out) throw std::runtime_error(path_ + ": cannot write " + value);
}

namespace {

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

std::string tail_of(const std::string& log) {
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.size() > 400) text = "..." + text.substr(text.size() - 400);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.empty() ? "(no output)" : text;
}

// The user Mahimahi runs as: its shells refuse uid or gid 0.
const passwd& mahimahi_user(const std::string& name) {
  const passwd* user = ::getpwnam(name.c_str());
  if (!user) throw std::runtime_error("--mahimahi-user: no user \"" + name + "\"");
  if (user->pw_uid == 0 || user->pw_gid == 0)
    throw std::runtime_error("--mahimahi-user: Mahimahi refuses uid or gid 0, and \"" + name + "\" has one");
  return *user;
}

// WORK/mahimahi, readable by that user (the work directory is root's 0700),
// with setuid-root copies of mm-delay and mm-link, as `make install` would
// leave them, so the build's own files stay as they are.
std::string prepare_dir(const MahimahiSetup& setup, const std::string& work) {
  const std::string dir = work + "/mahimahi";
  fs::create_directories(dir);
  fs::permissions(work, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  for (const char* name : {"mm-delay", "mm-link"}) {
    const std::string copy = dir + "/" + name;
    fs::copy_file(setup.dir + "/" + name, copy, fs::copy_options::overwrite_existing);
    if (::chown(copy.c_str(), 0, 0) < 0) base::throw_errno("chown " + copy);
    if (::chmod(copy.c_str(), 04755) < 0) base::throw_errno("chmod " + copy);
  }
  return dir;
}

}  // namespace

MahimahiShell::MahimahiShell(const MahimahiSetup& setup, const std::string& work, std::uint64_t bps) {
  const passwd& user = mahimahi_user(setup.user);
  const std::string dir = prepare_dir(setup, work);
  const std::string trace = mahimahi_trace(bps);
  const std::string up = dir + "/up.fifo", down = dir + "/down.trace", log = dir + "/shell.log";
  base::replace_file(down, trace);
  fs::permissions(down,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  fs::remove(up);
  if (::mkfifo(up.c_str(), 0644) < 0) base::throw_errno("mkfifo " + up);
  fs::remove(log);
  try {
    start(setup, user, dir, bps, trace);
  } catch (...) {
    stop();
    throw;
  }
}

void MahimahiShell::start(const MahimahiSetup& setup, const passwd& user, const std::string& dir, std::uint64_t bps,
                          const std::string& trace) {
  const std::string up = dir + "/up.fifo", down = dir + "/down.trace", log = dir + "/shell.log";
  // A queue of 4 BDP at the high rate and the 20 ms RTT, in bytes.
  const std::uint64_t queue_bytes = bps / 8 * 4 * 2 * kOneWayNs / 1'000'000'000;
  const std::string queue_args = fmt::format("bytes={}", queue_bytes);
  shell_ =
      spawn_logged({"/usr/bin/setpriv", fmt::format("--reuid={}", user.pw_uid), fmt::format("--regid={}", user.pw_gid),
                    "--clear-groups", "--", dir + "/mm-delay", std::to_string(kOneWayNs / kMs), dir + "/mm-link", up,
                    down, "--uplink-queue=droptail", "--uplink-queue-args=" + queue_args, "--downlink-queue=droptail",
                    "--downlink-queue-args=" + queue_args, "--", "/bin/sh", "-c",
                    // Gone by itself a while after the run should have ended.
                    fmt::format("echo \"ready $$ $MAHIMAHI_BASE\"; exec sleep {:.0f}", setup.seconds + 120)},
                   log);
  start_trace(up, trace, log);
  wait_ready(log);
  name_namespaces();
  // The sender's socket buffers as in the wanlab testbed's hosts.
  em::NetnsScope in_inner(inner_name_);
  em::write_sysctl("/proc/sys/net/ipv4/tcp_wmem", fmt::format("4096 16384 {}", em::units::parse_size(kTcpWmemMax)));
  em::write_sysctl("/proc/sys/net/ipv4/tcp_rmem", fmt::format("4096 131072 {}", em::units::parse_size(kTcpRmemMax)));
}

// The uplink trace goes through a FIFO: mm-link opens it just after taking
// its base timestamp (CLOCK_REALTIME, whole ms), so the open tells when the
// trace starts without its per-packet log.
void MahimahiShell::start_trace(const std::string& fifo, const std::string& trace, const std::string& log) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  base::UniqueFd fd;
  while (true) {
    fd = base::UniqueFd(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd) break;
    if (errno != ENXIO) base::throw_errno("opening " + fifo);
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
    if (n < 0) base::throw_errno("writing " + fifo);
    done += static_cast<std::size_t>(n);
  }
}

void MahimahiShell::wait_ready(const std::string& log) {
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

void MahimahiShell::name_namespaces() {
  inner_name_ = fmt::format("wanlab-mm-{}.inner", shell_.pid());
  outer_name_ = fmt::format("wanlab-mm-{}.outer", shell_.pid());
  em::name_current_netns(outer_name_);
  const std::string path = fmt::format("/proc/{}/ns/net", inner_pid_);
  base::UniqueFd inner(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!inner) base::throw_errno("opening " + path);
  em::NetnsScope in_inner(inner.get());
  em::name_current_netns(inner_name_);
}

bool MahimahiShell::exited() { return shell_.pid() <= 0 || shell_.try_wait().has_value(); }

// Ends the inner shell (mm-link and mm-delay then exit), waits for mm-delay,
// and drops the names; a shell that stays is sent SIGTERM, then SIGKILL.
void MahimahiShell::stop() {
  if (inner_pid_ > 0) ::kill(inner_pid_, SIGTERM);
  inner_pid_ = 0;
  for (int sig : {0, SIGTERM, SIGKILL}) {
    if (shell_.pid() <= 0) break;
    if (sig != 0) ::kill(shell_.pid(), sig);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!exited() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const std::string& name : {inner_name_, outer_name_})
    if (!name.empty()) em::delete_netns(name);
  inner_name_.clear();
  outer_name_.clear();
}

}  // namespace wanlab::bench::trace
