// The soak benchmark (issue 11, item 6): a three-DC testbed under mixed load
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
#include <bpf/bpf.h>
#include <net/if.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/core.h>
#include <fmt/format.h>

#include "bench_support.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/leftovers.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/sys.hpp"

namespace fs = std::filesystem;
namespace em = wanlab::emulator;
namespace base = wanlab::base;
using namespace wanlab::bench;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string wanlab;
  std::string scenario;
  std::string name = "soak";
  double seconds = 600;
  int sample_seconds = 10;
  double warmup_seconds = 60;
  std::string markdown;
  std::string csv;
  std::string command = "bench/run-soak-bench.sh";
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string last_lines(const std::string& path, std::size_t count) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > count) lines.pop_front();
  }
  std::string text;
  for (const auto& line : lines) text += (text.empty() ? "" : " | ") + line;
  return text;
}

// ---------------------------------------------------------------- the changes

// What `wanlab set` cycles through. Rates, delays, losses and queues run on
// cycles of different lengths so that their combinations vary; "12s" is the
// queue no sender here can fill (see QueueBound), the others overflow.
const std::vector<std::string> kRates = {"20mbit", "50mbit", "100mbit", "30mbit", "70mbit"};
const std::vector<std::string> kDelays = {"5ms", "20ms", "40ms", "70ms"};
const std::vector<std::string> kLosses = {"0%", "0%", "0.1%", "0%", "1%", "0%", "0.5%"};
const std::vector<std::string> kJitters = {"0ms", "0ms", "1ms"};
const std::vector<std::string> kQueues = {"1bdp", "20ms", "12s", "0.5bdp", "12s"};
constexpr double kSlowestRateBps = 20e6;

struct SetChange {
  int from = 0, to = 0;  // DC indices
  bool one_way = false;
  std::vector<std::pair<std::string, std::string>> fields;
};

// The k-th change: DC pair k mod 3, both directions, except every fourth
// round, which changes one direction only.
SetChange change_for(int k) {
  static const int kDcPairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  const int p = k % 3, round = k / 3;
  SetChange change;
  change.from = kDcPairs[p][0];
  change.to = kDcPairs[p][1];
  if (round % 4 == 3) {
    change.one_way = true;
    std::swap(change.from, change.to);
  }
  auto pick = [](const std::vector<std::string>& values, int index) {
    return values[static_cast<std::size_t>(index) % values.size()];
  };
  change.fields = {{"rate", pick(kRates, round + p)},
                   {"delay", pick(kDelays, round + 2 * p)},
                   {"loss", pick(kLosses, round + p)},
                   {"jitter", pick(kJitters, round)},
                   {"queue", pick(kQueues, round + round / 5 + p)}};
  return change;
}

std::string describe(const SetChange& change, const std::vector<std::string>& dcs) {
  std::string text =
      fmt::format("{} {}", dcs[static_cast<std::size_t>(change.from)], dcs[static_cast<std::size_t>(change.to)]);
  for (const auto& [field, value] : change.fields) text += fmt::format(" --{} {}", field, value);
  return text + (change.one_way ? " --one-way" : "");
}

// ---------------------------------------------------------------- drops

// The queue can only overflow where what the senders may have in flight takes
// longer to serialize than the queue limit allows. A TCP sender keeps at most
// its send buffer unacknowledged (tcp_wmem max, plus one 64 KiB skb of
// overshoot), framed as 1514-byte frames per 1448 bytes of payload; twice that
// covers segments in the queue twice (a spurious retransmission). Every byte
// in the emulated queue was charged at a rate no lower than the slowest the
// pair has had, so its backlog never exceeds
//   2 x streams x (wmem + 64 KiB) x 1514/1448 x 8 / slowest rate.
// A queue limit at or above that cannot overflow: a queue drop there is not
// explained by the configuration.
struct QueueBound {
  int streams = 0;  // on this directed pair at most
  std::uint64_t wmem_bytes = 0;
  double slowest_bps = 0;  // the slowest rate the pair has had so far (0: none yet)

  double backlog_bytes() const { return 2.0 * streams * (static_cast<double>(wmem_bytes) + 65536.0) * 1514.0 / 1448.0; }
  double backlog_ns() const {
    if (streams == 0) return 0;
    if (slowest_bps <= 0) return INFINITY;  // unlimited so far: no backlog, but be safe
    return backlog_bytes() * 8e9 / slowest_bps;
  }
};

bool permits_loss(const wanlab_pair_config& config) {
  if (!(config.flags & WANLAB_PAIR_ENABLED)) return false;
  if (config.loss_model == WANLAB_LOSS_GILBERT_ELLIOTT) return config.ge_bad_loss32 != 0 || config.ge_good_loss32 != 0;
  return config.loss_p32 != 0;
}

bool permits_queue_drops(const wanlab_pair_config& config, const QueueBound& bound) {
  if (!(config.flags & WANLAB_PAIR_ENABLED) || config.queue_limit_ns == 0) return false;
  return static_cast<double>(config.queue_limit_ns) < bound.backlog_ns();
}

// One directed DC pair through the run.
struct PairTrack {
  std::string label;
  bool wan = false;  // between two DCs (not within one)
  QueueBound bound;
  wanlab_pair_config config{};             // as the data plane holds it now
  wanlab_pair_stats counters{};            // at the start of the current slice
  bool loss_ok = false, queue_ok = false;  // some configuration in force during the current slice permits them
  std::uint64_t queue_expected = 0, queue_unexpected = 0, loss_expected = 0, loss_unexpected = 0;
  int slices = 0, slices_queue_ruled_out = 0, slices_loss_ruled_out = 0;
  std::vector<std::string> unexplained;  // "t=123s: 4 queue drops, limit 12s ..."
};

// ---------------------------------------------------------------- processes

enum class Kind { server, long_client, short_client, sleeper, escape };

struct HostProcess {
  Kind kind = Kind::sleeper;
  std::string label;
  pid_t pid = 0;
  Clock::time_point started;
  std::string log;
  int pair = -1;  // long and short clients: the directed pair they load
  std::optional<Clock::time_point> kill_at;
  int signal_sent = 0;
  bool reaped = false;
  int status = 0;  // exit status, 128 + signal
};

// ---------------------------------------------------------------- /proc

struct DaemonSample {
  double rss_mib = 0;
  int fds = 0;
  int threads = 0;
};

DaemonSample daemon_sample(pid_t pid) {
  DaemonSample sample;
  std::istringstream status(base::read_kernel_file(fmt::format("/proc/{}/status", pid)));
  for (std::string line; std::getline(status, line);) {
    std::istringstream fields(line);
    std::string key;
    double value = 0;
    fields >> key >> value;
    if (key == "VmRSS:") sample.rss_mib = value / 1024.0;
    if (key == "Threads:") sample.threads = static_cast<int>(value);
  }
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(fmt::format("/proc/{}/fd", pid))) ++sample.fds;
  return sample;
}

// The kernel's NFQUEUE counters for our queue, from the daemon's namespace:
// packets dropped because the queue was full, and because the message could
// not be delivered to the releaser's socket (its buffer full).
struct KernelQueueDrops {
  std::uint64_t queue_full = 0, undelivered = 0, waiting = 0;
};

KernelQueueDrops kernel_queue_drops(pid_t daemon, std::uint16_t queue_num) {
  KernelQueueDrops drops;
  std::ifstream in(fmt::format("/proc/{}/net/netfilter/nfnetlink_queue", daemon));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::uint64_t number = 0, portid = 0, total = 0, mode = 0, range = 0, dropped = 0, user_dropped = 0;
    if (fields >> number >> portid >> total >> mode >> range >> dropped >> user_dropped && number == queue_num) {
      drops.waiting = total;
      drops.queue_full = dropped;
      drops.undelivered = user_dropped;
    }
  }
  return drops;
}

// Packets dropped by the interfaces (rx + tx) of the testbed's namespaces.
std::uint64_t interface_drops(const std::vector<std::string>& namespaces) {
  std::uint64_t total = 0;
  for (const auto& ns : namespaces) {
    em::NetnsScope inside(ns);
    std::istringstream lines(base::read_kernel_file("/proc/thread-self/net/dev"));
    for (std::string line; std::getline(lines, line);) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::istringstream fields(line.substr(colon + 1));
      std::uint64_t value = 0;
      for (int index = 0; index < 16 && fields >> value; ++index)
        if (index == 3 || index == 11) total += value;
    }
  }
  return total;
}

// The first `"key":number` in a JSON text (the top level of a perf report comes first).
std::optional<double> json_first_number(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nullopt;
  try {
    return std::stod(text.substr(at + key.size() + 3));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// ---------------------------------------------------------------- the soak

struct Row {
  double t = 0;
  CpuMeter::Usage cpu;
  DaemonSample daemon;
  std::uint64_t held = 0, verdicts = 0;
  std::uint64_t wan_packets = 0;
  double wan_mbit = 0;
  std::uint64_t queue_expected = 0, queue_unexpected = 0, loss_expected = 0, loss_unexpected = 0;
  std::uint64_t kernel_queue_full = 0, kernel_undelivered = 0, iface_drops = 0;
  std::uint64_t waiting_in_kernel = 0;
  double set_ms_mean = 0, set_ms_max = 0, set_cpu_ms_mean = 0;
  int set_failures = 0;
  int host_processes = 0;
  std::string load1;
};

struct Totals {
  int sets = 0, set_failures = 0;
  std::vector<std::string> set_errors;
  int long_failures = 0, long_restarts = 0;
  std::vector<std::string> long_errors;
  int short_started = 0, short_killed = 0, short_finished = 0, short_failed = 0;
  std::vector<std::string> short_errors;
  int sleepers_started = 0, sleepers_termed = 0, sleepers_killed = 0, escapes = 0;
  std::vector<double> set_ms, set_cpu_ms;  // every call: wall time, the process's CPU time
};

class Soak {
 public:
  Soak(const Config& config, const std::string& work_dir) : config_(config), work_(work_dir) {}
  int run();

 private:
  // Starts argv on host h through `wanlab exec`; output to `log` ("" = none).
  HostProcess& launch(Kind kind, std::string label, const em::Host& h, std::vector<std::string> argv,
                      std::string log = "");
  void start_servers();
  void start_long_client(int pair, double seconds);
  void churn(int tick);
  void apply_change(int tick);
  void reap();
  void end_slice(double t);
  Row sample_row(double t);
  std::vector<std::string> exec(const em::Host& host, std::vector<std::string> argv) const;
  const em::Host& host(int dc, int index) const;
  std::string ip_of(int dc) const { return em::ipv4_to_string(host(dc, 0).ipv4); }
  int pair_index(int src, int dst) const { return src * dcs_ + dst; }
  int running(Kind kind) const;
  void read_configs(bool widen);
  void write_outputs(const std::vector<std::string>& summary, const std::vector<std::string>& leftovers_found,
                     double run_seconds, const std::string& load_start, const std::string& load_end,
                     const MachineInfo& machine, const std::vector<std::vector<std::string>>& client_rows);

  const Config& config_;
  std::string work_;
  std::unique_ptr<Testbed> bed_;
  std::optional<em::Datapath> datapath_;
  int dcs_ = 0;
  std::uint64_t wmem_ = 0;
  std::vector<PairTrack> pairs_;
  std::vector<HostProcess> processes_;
  Clock::time_point start_;
  Totals totals_;
  std::vector<Row> rows_;
  // Accumulated since the last row.
  std::vector<double> row_set_ms_, row_set_cpu_ms_;
  int row_set_failures_ = 0;
  std::uint64_t row_q_exp_ = 0, row_q_unexp_ = 0, row_l_exp_ = 0, row_l_unexp_ = 0;
  wanlab_pair_stats row_start_totals_{};
  std::optional<CpuMeter> row_cpu_;
  KernelQueueDrops kernel_at_row_{};
  std::uint64_t iface_at_row_ = 0;
  em::ReleaserStats releaser_at_row_{};
  std::vector<std::string> namespaces_;
  std::string release_path_;
};

const em::Host& Soak::host(int dc, int index) const {
  for (const auto& h : bed_->state().hosts)
    if (h.dc_index == dc && h.index == index) return h;
  throw std::runtime_error(
      fmt::format("the scenario has no host {} in DC {} (the soak needs two hosts per DC)", index, dc));
}

std::vector<std::string> Soak::exec(const em::Host& h, std::vector<std::string> argv) const {
  std::vector<std::string> full = {config_.wanlab, "exec", h.name, "--testbed", bed_->name(), "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

int Soak::running(Kind kind) const {
  int count = 0;
  for (const auto& p : processes_) count += p.kind == kind && !p.reaped;
  return count;
}

HostProcess& Soak::launch(Kind kind, std::string label, const em::Host& h, std::vector<std::string> argv,
                          std::string log) {
  HostProcess p;
  p.kind = kind;
  p.label = std::move(label);
  p.log = std::move(log);
  p.pid = spawn_command(exec(h, std::move(argv)), p.log);
  p.started = Clock::now();
  processes_.push_back(std::move(p));
  return processes_.back();
}

void Soak::start_servers() {
  for (int dc = 0; dc < dcs_; ++dc)
    launch(Kind::server, "perf server on " + host(dc, 0).name, host(dc, 0), {config_.wanlab, "perf", "server"},
           fmt::format("{}/server-{}.log", work_, host(dc, 0).name));
}

// Host 1 of the source DC to host 0 of the destination DC, 2 streams, until
// `seconds` from now.
void Soak::start_long_client(int pair, double seconds) {
  const int src = pair / dcs_, dst = pair % dcs_;
  auto& p = launch(Kind::long_client, fmt::format("{} -> {}", host(src, 1).name, host(dst, 0).name), host(src, 1),
                   {config_.wanlab, "perf", "client", ip_of(dst), "-t", fmt::format("{:.0f}", seconds), "-P", "2",
                    "--cc", "cubic", "-i", "0", "--json"},
                   fmt::format("{}/long-{}-{}-{}.log", work_, src, dst, totals_.long_restarts));
  p.pair = pair;
}

// One host-process action a second, on a cycle of four seconds: start a
// sleeper; end the oldest sleeper (SIGTERM and SIGKILL in turn); a short perf
// client (3 s, one stream; every other one SIGKILLed after 1.5 s); every
// third cycle a process that leaves us (`setsid -f sleep`), for `down` to end.
void Soak::churn(int tick) {
  const auto& hosts = bed_->state().hosts;
  const int cycle = tick / 4;
  switch (tick % 4) {
    case 0: {
      const auto& h = hosts[static_cast<std::size_t>(cycle) % hosts.size()];
      launch(Kind::sleeper, "sleep on " + h.name, h, {"sleep", "3600"});
      totals_.sleepers_started++;
      break;
    }
    case 1: {
      if (running(Kind::sleeper) < 3) break;
      for (auto& p : processes_) {
        if (p.kind != Kind::sleeper || p.reaped || p.signal_sent) continue;
        p.signal_sent = cycle % 2 ? SIGKILL : SIGTERM;
        ::kill(p.pid, p.signal_sent);
        (p.signal_sent == SIGKILL ? totals_.sleepers_killed : totals_.sleepers_termed)++;
        break;
      }
      break;
    }
    case 2: {
      if (running(Kind::short_client) > 0) break;  // at most one: the queue bound counts one extra stream
      std::vector<int> wan;
      for (int i = 0; i < static_cast<int>(pairs_.size()); ++i)
        if (pairs_[static_cast<std::size_t>(i)].wan) wan.push_back(i);
      const int pair = wan[static_cast<std::size_t>(cycle) % wan.size()];
      const int src = pair / dcs_, dst = pair % dcs_;
      auto& p = launch(Kind::short_client, fmt::format("{} -> {} (short)", host(src, 0).name, host(dst, 0).name),
                       host(src, 0),
                       {config_.wanlab, "perf", "client", ip_of(dst), "-t", "3", "-P", "1", "--cc", "cubic", "-i", "0"},
                       fmt::format("{}/short-{}.log", work_, totals_.short_started));
      p.pair = pair;
      if (totals_.short_started % 2) p.kill_at = p.started + 1500ms;
      totals_.short_started++;
      break;
    }
    default: {
      if (cycle % 3 != 0 || totals_.escapes >= 12) break;
      const auto& h = hosts[static_cast<std::size_t>(cycle / 3) % hosts.size()];
      launch(Kind::escape, "setsid -f sleep on " + h.name, h, {"setsid", "-f", "sleep", "100000"});
      totals_.escapes++;
      break;
    }
  }
}

void Soak::reap() {
  const double remaining = config_.seconds - seconds_since(start_);
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    auto& p = processes_[i];
    if (p.reaped) continue;
    if (p.kill_at && Clock::now() >= *p.kill_at && !p.signal_sent) {
      p.signal_sent = SIGKILL;
      ::kill(p.pid, SIGKILL);
    }
    int status = 0;
    if (::waitpid(p.pid, &status, WNOHANG) != p.pid) continue;
    p.reaped = true;
    p.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    const double lived = seconds_since(p.started);
    switch (p.kind) {
      case Kind::long_client:
        // A long client ends by itself at the end of the soak; anything earlier is a failure.
        if (remaining > 5) {
          totals_.long_failures++;
          totals_.long_errors.push_back(fmt::format("t={:.0f}s {} exited with {} after {:.0f} s: {}",
                                                    seconds_since(start_), p.label, p.status, lived,
                                                    last_lines(p.log, 3)));
          if (remaining > 10) {
            totals_.long_restarts++;
            start_long_client(p.pair, remaining);
          }
        }
        break;
      case Kind::short_client:
        if (p.signal_sent) {
          totals_.short_killed++;
        } else if (p.status == 0) {
          totals_.short_finished++;
        } else {
          totals_.short_failed++;
          totals_.short_errors.push_back(fmt::format("t={:.0f}s {} exited with {}: {}", seconds_since(start_), p.label,
                                                     p.status, last_lines(p.log, 3)));
        }
        break;
      case Kind::server:
        totals_.long_errors.push_back(fmt::format("t={:.0f}s {} exited with {}: {}", seconds_since(start_), p.label,
                                                  p.status, last_lines(p.log, 3)));
        break;
      default: break;
    }
  }
}

// Reads every pair's configuration back from the data plane. With `widen`,
// what it permits widens the current slice (the slice holds both the old and
// the new configuration); otherwise a new slice starts with it.
void Soak::read_configs(bool widen) {
  for (int src = 0; src < dcs_; ++src) {
    for (int dst = 0; dst < dcs_; ++dst) {
      auto& track = pairs_[static_cast<std::size_t>(pair_index(src, dst))];
      track.config = datapath_->pair(src, dst);
      if (track.config.rate_bps != 0)
        track.bound.slowest_bps = track.bound.slowest_bps == 0
                                      ? static_cast<double>(track.config.rate_bps)
                                      : std::min(track.bound.slowest_bps, static_cast<double>(track.config.rate_bps));
      const bool loss = permits_loss(track.config), queue = permits_queue_drops(track.config, track.bound);
      track.loss_ok = widen ? track.loss_ok || loss : loss;
      track.queue_ok = widen ? track.queue_ok || queue : queue;
    }
  }
}

// Closes the one-second slice that ends now: each pair's drops against what
// its configurations during the slice permit; a new slice starts.
void Soak::end_slice(double t) {
  for (int src = 0; src < dcs_; ++src) {
    for (int dst = 0; dst < dcs_; ++dst) {
      auto& track = pairs_[static_cast<std::size_t>(pair_index(src, dst))];
      const wanlab_pair_stats now = datapath_->stats(src, dst);
      const std::uint64_t queue = now.drops[WANLAB_DROP_QUEUE] - track.counters.drops[WANLAB_DROP_QUEUE];
      const std::uint64_t loss = now.drops[WANLAB_DROP_LOSS] - track.counters.drops[WANLAB_DROP_LOSS];
      track.counters = now;
      track.slices++;
      track.slices_queue_ruled_out += !track.queue_ok;
      track.slices_loss_ruled_out += !track.loss_ok;
      (track.queue_ok ? track.queue_expected : track.queue_unexpected) += queue;
      (track.queue_ok ? row_q_exp_ : row_q_unexp_) += queue;
      (track.loss_ok ? track.loss_expected : track.loss_unexpected) += loss;
      (track.loss_ok ? row_l_exp_ : row_l_unexp_) += loss;
      if ((queue && !track.queue_ok) || (loss && !track.loss_ok))
        track.unexplained.push_back(
            fmt::format("t={:.0f}s: {} queue drop(s), {} loss drop(s); rate {:.0f} Mbit/s, queue limit {:.3f} s "
                        "(backlog bound {:.3f} s), loss p32 {}",
                        t, queue, loss, static_cast<double>(track.config.rate_bps) / 1e6,
                        static_cast<double>(track.config.queue_limit_ns) / 1e9, track.bound.backlog_ns() / 1e9,
                        track.config.loss_p32));
    }
  }
  read_configs(false);
}

void Soak::apply_change(int tick) {
  const SetChange change = change_for(tick);
  std::vector<std::string> argv = {config_.wanlab,
                                   "set",
                                   bed_->state().dcs[static_cast<std::size_t>(change.from)],
                                   bed_->state().dcs[static_cast<std::size_t>(change.to)],
                                   "--testbed",
                                   bed_->name()};
  for (const auto& [field, value] : change.fields) {
    argv.push_back("--" + field);
    argv.push_back(value);
  }
  if (change.one_way) argv.push_back("--one-way");
  const auto result = run_command(argv);
  totals_.sets++;
  totals_.set_ms.push_back(result.seconds * 1e3);
  totals_.set_cpu_ms.push_back(result.cpu_seconds * 1e3);
  row_set_ms_.push_back(result.seconds * 1e3);
  row_set_cpu_ms_.push_back(result.cpu_seconds * 1e3);
  if (result.status != 0) {
    totals_.set_failures++;
    row_set_failures_++;
    if (totals_.set_errors.size() < 5)
      totals_.set_errors.push_back(fmt::format("wanlab set {} exited with {}: {}", describe(change, bed_->state().dcs),
                                               result.status, result.output));
  }
  read_configs(true);
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

wanlab_pair_stats sum_wan(const std::vector<PairTrack>& pairs) {
  wanlab_pair_stats total{};
  for (const auto& track : pairs) {
    if (!track.wan) continue;
    total.packets += track.counters.packets;
    total.bytes += track.counters.bytes;
  }
  return total;
}

Row Soak::sample_row(double t) {
  Row row;
  row.t = t;
  row.cpu = row_cpu_->read();
  row_cpu_.emplace(bed_->state().daemon_pid);
  row.daemon = daemon_sample(bed_->state().daemon_pid);
  const auto releaser = read_releaser_counters(bed_->name());
  row.held = releaser.held;
  row.verdicts = releaser.packets - releaser_at_row_.packets;
  releaser_at_row_ = releaser;
  const auto totals = sum_wan(pairs_);
  row.wan_packets = totals.packets - row_start_totals_.packets;
  row.wan_mbit = static_cast<double>(totals.bytes - row_start_totals_.bytes) * 8 / row.cpu.seconds / 1e6;
  row_start_totals_ = totals;
  row.queue_expected = std::exchange(row_q_exp_, 0);
  row.queue_unexpected = std::exchange(row_q_unexp_, 0);
  row.loss_expected = std::exchange(row_l_exp_, 0);
  row.loss_unexpected = std::exchange(row_l_unexp_, 0);
  const auto kernel = kernel_queue_drops(bed_->state().daemon_pid, bed_->state().queue_num);
  row.kernel_queue_full = kernel.queue_full - kernel_at_row_.queue_full;
  row.kernel_undelivered = kernel.undelivered - kernel_at_row_.undelivered;
  row.waiting_in_kernel = kernel.waiting;
  kernel_at_row_ = kernel;
  const auto iface = interface_drops(namespaces_);
  row.iface_drops = iface - iface_at_row_;
  iface_at_row_ = iface;
  if (!row_set_ms_.empty()) {
    row.set_ms_mean = mean(row_set_ms_);
    row.set_cpu_ms_mean = mean(row_set_cpu_ms_);
    row.set_ms_max = *std::max_element(row_set_ms_.begin(), row_set_ms_.end());
  }
  row_set_ms_.clear();
  row_set_cpu_ms_.clear();
  row.set_failures = std::exchange(row_set_failures_, 0);
  for (const auto& p : processes_) row.host_processes += !p.reaped && p.kind != Kind::escape;
  const std::string load = load_average();
  row.load1 = load.substr(0, load.find(' '));
  return row;
}

std::vector<std::string> row_cells(const Row& row) {
  return {fmt::format("{:.0f}", row.t),
          fmt::format("{:.1f}", row.cpu.process_pct_of_core),
          fmt::format("{:.2f}", row.daemon.rss_mib),
          std::to_string(row.daemon.fds),
          std::to_string(row.daemon.threads),
          std::to_string(row.verdicts),
          std::to_string(row.held),
          std::to_string(row.wan_packets),
          fmt::format("{:.1f}", row.wan_mbit),
          fmt::format("{} / {}", row.queue_expected, row.queue_unexpected),
          fmt::format("{} / {}", row.loss_expected, row.loss_unexpected),
          fmt::format("{} / {}", row.kernel_queue_full, row.kernel_undelivered),
          std::to_string(row.iface_drops),
          fmt::format("{:.1f} / {:.0f} / {:.0f}{}", row.set_cpu_ms_mean, row.set_ms_mean, row.set_ms_max,
                      row.set_failures ? fmt::format(" ({} failed)", row.set_failures) : ""),
          std::to_string(row.host_processes),
          fmt::format("{:.0f}% / {:.0f}%", row.cpu.system_pct_of_all, row.cpu.steal_pct_of_all),
          row.load1};
}

const std::vector<std::string> kHeader = {"t (s)",
                                          "Releaser CPU (% of a core)",
                                          "RSS (MiB)",
                                          "fds",
                                          "Threads",
                                          "Verdicts",
                                          "Held",
                                          "WAN packets",
                                          "WAN Mbit/s",
                                          "Queue drops exp / unexp",
                                          "Loss drops exp / unexp",
                                          "NFQUEUE kernel drops full / undelivered",
                                          "Interface drops",
                                          "`set` CPU ms mean / wall ms mean / max",
                                          "Host processes",
                                          "Machine busy / steal",
                                          "Load 1 min"};

int Soak::run() {
  const MachineInfo machine = machine_info();
  const std::string load_start = load_average();
  const auto run_start = Clock::now();
  const std::set<std::string> links_before = em::link_names();

  fmt::print("wanlab soak benchmark, {}\nmachine: {}; {} CPUs; load average at start {}\n", now_text(), machine.kernel,
             machine.cpus, load_start);
  fmt::print("bringing up {} as {} ...\n", config_.scenario, config_.name);
  std::fflush(stdout);
  bed_ = std::make_unique<Testbed>(config_.wanlab, config_.scenario, config_.name);
  const auto& state = bed_->state();
  release_path_ = em::to_string(state.release) + " (" + state.release_reason + ")";
  if (state.release != em::ReleasePath::nfqueue || state.daemon_pid <= 0)
    throw std::runtime_error("the soak measures the nfqueue path's releaser daemon; this testbed runs " +
                             release_path_);
  dcs_ = static_cast<int>(state.dcs.size());
  if (dcs_ != 3) throw std::runtime_error(fmt::format("{}: expected three DCs, found {}", config_.scenario, dcs_));
  const em::Scenario scenario = em::load_scenario(state.scenario_path, em::ScheduleFiles::skip);
  wmem_ = scenario.host.tcp_wmem_max.value_or(4u << 20);
  fmt::print("up in {:.1f} s; release path {}; daemon pid {}\n", bed_->up_seconds(), release_path_, state.daemon_pid);

  namespaces_ = {state.netns};
  for (const auto& h : state.hosts) namespaces_.push_back(h.netns);

  pairs_.resize(static_cast<std::size_t>(dcs_ * dcs_));
  for (int src = 0; src < dcs_; ++src) {
    for (int dst = 0; dst < dcs_; ++dst) {
      auto& track = pairs_[static_cast<std::size_t>(pair_index(src, dst))];
      track.label = state.dcs[static_cast<std::size_t>(src)] + " -> " + state.dcs[static_cast<std::size_t>(dst)];
      track.wan = src != dst;
      track.bound.streams = track.wan ? 3 : 0;  // a long client's 2 streams + at most one short client
      track.bound.wmem_bytes = wmem_;
    }
  }
  datapath_.emplace(em::Datapath::open_pinned(em::bpffs_dir(state.name)));
  for (int src = 0; src < dcs_; ++src)
    for (int dst = 0; dst < dcs_; ++dst)
      pairs_[static_cast<std::size_t>(pair_index(src, dst))].counters = datapath_->stats(src, dst);
  read_configs(false);

  start_servers();
  std::this_thread::sleep_for(1s);  // the servers listen
  start_ = Clock::now();
  for (std::size_t pair = 0; pair < pairs_.size(); ++pair)
    if (pairs_[pair].wan) start_long_client(static_cast<int>(pair), config_.seconds);
  row_cpu_.emplace(state.daemon_pid);
  releaser_at_row_ = read_releaser_counters(state.name);
  kernel_at_row_ = kernel_queue_drops(state.daemon_pid, state.queue_num);
  iface_at_row_ = interface_drops(namespaces_);
  row_start_totals_ = sum_wan(pairs_);

  Table live;
  live.header = kHeader;
  fmt::print(
      "soak for {:.0f} s: perf on {} directed pairs, a `wanlab set` every second, host processes started and killed; a "
      "row every {} s\n\n",
      config_.seconds, 6, config_.sample_seconds);
  std::fflush(stdout);
  const int ticks = static_cast<int>(std::lround(config_.seconds));
  for (int tick = 0; tick < ticks; ++tick) {
    std::this_thread::sleep_until(start_ + std::chrono::seconds(tick));
    if (tick > 0) end_slice(tick);
    if (tick > 0 && tick % config_.sample_seconds == 0) {
      rows_.push_back(sample_row(tick));
      const auto cells = row_cells(rows_.back());
      fmt::print("{}\n", fmt::join(cells, "  "));
      std::fflush(stdout);
    }
    reap();
    churn(tick);
    apply_change(tick);
  }
  std::this_thread::sleep_until(start_ + std::chrono::seconds(ticks));
  end_slice(ticks);
  if (ticks % config_.sample_seconds == 0) rows_.push_back(sample_row(ticks));
  fmt::print("soak done; waiting for the long perf clients' reports\n");
  std::fflush(stdout);

  // The long clients end by themselves now; their reports say what each pair carried.
  const auto wait_until = Clock::now() + 60s;
  while (running(Kind::long_client) > 0 && Clock::now() < wait_until) {
    reap();
    std::this_thread::sleep_for(200ms);
  }
  reap();
  std::vector<std::vector<std::string>> client_rows;
  for (const auto& p : processes_) {
    if (p.kind != Kind::long_client) continue;
    std::string text;
    try {
      text = base::read_kernel_file(p.log);
    } catch (const std::exception&) {
    }
    const auto goodput = json_first_number(text, "goodput_bps"), bytes = json_first_number(text, "bytes"),
               retransmits = json_first_number(text, "retransmits"), seconds = json_first_number(text, "seconds");
    client_rows.push_back({p.label, p.reaped ? std::to_string(p.status) : "still running",
                           seconds ? fmt::format("{:.0f}", *seconds) : "-",
                           bytes ? fmt::format("{:.0f}", *bytes / 1e6) : "-",
                           goodput ? fmt::format("{:.1f}", *goodput / 1e6) : "-",
                           retransmits ? fmt::format("{:.0f}", *retransmits) : "-"});
  }

  // What `down` must end: every process in the testbed's namespaces now.
  datapath_.reset();  // our map descriptors would keep the maps alive
  const em::TestbedTraces traces(state, links_before);
  const std::string name = state.name;
  fmt::print("wanlab down {} ({} processes in its namespaces, {} of them started by the soak) ...\n", name,
             traces.processes(),
             std::count_if(processes_.begin(), processes_.end(), [](const HostProcess& p) { return !p.reaped; }));
  std::fflush(stdout);
  const auto down = bed_->down();
  // Our own children that `down` ended: reap them so that no zombie counts.
  const auto reap_until = Clock::now() + 10s;
  while (std::any_of(processes_.begin(), processes_.end(), [](const HostProcess& p) { return !p.reaped; }) &&
         Clock::now() < reap_until) {
    for (auto& p : processes_) {
      int status = 0;
      if (!p.reaped && ::waitpid(p.pid, &status, WNOHANG) == p.pid) p.reaped = true;
    }
    std::this_thread::sleep_for(50ms);
  }

  // Leftovers. Namespaces die asynchronously: give the kernel up to 10 s.
  std::vector<std::string> leftovers;
  const auto settle_start = Clock::now();
  auto find_leftovers = [&] {
    std::vector<std::string> found;
    if (down.status != 0) found.push_back(fmt::format("`wanlab down` exited with {}: {}", down.status, down.output));
    for (auto& line : traces.leftovers()) found.push_back(std::move(line));
    for (const auto& p : processes_)
      if (!p.reaped) found.push_back(fmt::format("child {} ({}) not ended", p.pid, p.label));
    return found;
  };
  do {
    leftovers = find_leftovers();
    if (leftovers.empty()) break;
    std::this_thread::sleep_for(250ms);
  } while (seconds_since(settle_start) < 10);
  const double settle_seconds = seconds_since(settle_start);
  fmt::print("down took {:.1f} s; leftovers checked {:.1f} s after it\n", down.seconds, settle_seconds);

  // ---------------------------------------------------------------- verdicts
  std::vector<std::string> summary;
  // Memory: RSS from the end of the warm-up on.
  const Row* warm = nullptr;
  for (const auto& row : rows_)
    if (row.t >= config_.warmup_seconds) {
      warm = &row;
      break;
    }
  if (!warm && !rows_.empty()) warm = &rows_.back();
  double rss_max = 0, rss_first = rows_.empty() ? 0 : rows_.front().daemon.rss_mib;
  int fds_max = 0;
  double slope_kib_per_min = 0;
  bool memory_flat = false, fds_flat = false;
  if (warm) {
    std::vector<double> ts, rss;
    for (const auto& row : rows_) {
      if (row.t < warm->t) continue;
      rss_max = std::max(rss_max, row.daemon.rss_mib);
      fds_max = std::max(fds_max, row.daemon.fds);
      ts.push_back(row.t / 60.0);
      rss.push_back(row.daemon.rss_mib * 1024.0);
    }
    if (ts.size() >= 2) {
      double mt = 0, mr = 0;
      for (std::size_t i = 0; i < ts.size(); ++i) mt += ts[i], mr += rss[i];
      mt /= static_cast<double>(ts.size());
      mr /= static_cast<double>(ts.size());
      double num = 0, den = 0;
      for (std::size_t i = 0; i < ts.size(); ++i)
        num += (ts[i] - mt) * (rss[i] - mr), den += (ts[i] - mt) * (ts[i] - mt);
      slope_kib_per_min = den > 0 ? num / den : 0;
    }
    const double allowed = std::max(2.0, 0.05 * warm->daemon.rss_mib);
    memory_flat = rss_max - warm->daemon.rss_mib <= allowed;
    fds_flat = rows_.back().daemon.fds <= warm->daemon.fds;
    summary.push_back(
        fmt::format("Memory: releaser RSS {:.2f} MiB at t={:.0f}s (first row), {:.2f} MiB after the warm-up "
                    "(t={:.0f}s), {:.2f} MiB at the end, at most {:.2f} "
                    "MiB after the warm-up: growth {:+.2f} MiB, allowed {:.2f} MiB (2 MiB or 5%, the larger); trend "
                    "{:+.1f} KiB/min -> {}",
                    rss_first, rows_.front().t, warm->daemon.rss_mib, warm->t, rows_.back().daemon.rss_mib, rss_max,
                    rss_max - warm->daemon.rss_mib, allowed, slope_kib_per_min, memory_flat ? "FLAT" : "GROWS"));
    summary.push_back(fmt::format("Descriptors: {} after the warm-up, {} at the end, at most {} -> {}",
                                  warm->daemon.fds, rows_.back().daemon.fds, fds_max, fds_flat ? "FLAT" : "GROWS"));
  }
  double cpu_sum = 0, cpu_max = 0;
  for (const auto& row : rows_)
    cpu_sum += row.cpu.process_pct_of_core, cpu_max = std::max(cpu_max, row.cpu.process_pct_of_core);
  std::uint64_t q_exp = 0, q_unexp = 0, l_exp = 0, l_unexp = 0, kq_full = 0, kq_undelivered = 0, iface = 0,
                verdicts = 0;
  int slices = 0, q_ruled_out = 0, l_ruled_out = 0;
  for (const auto& track : pairs_) {
    q_exp += track.queue_expected, q_unexp += track.queue_unexpected, l_exp += track.loss_expected,
        l_unexp += track.loss_unexpected;
    if (track.wan)
      slices += track.slices, q_ruled_out += track.slices_queue_ruled_out, l_ruled_out += track.slices_loss_ruled_out;
  }
  for (const auto& row : rows_)
    kq_full += row.kernel_queue_full, kq_undelivered += row.kernel_undelivered, iface += row.iface_drops,
        verdicts += row.verdicts;
  const bool drops_ok = q_unexp == 0 && l_unexp == 0 && kq_full == 0 && kq_undelivered == 0 && iface == 0;
  summary.push_back(fmt::format("Releaser CPU: mean {:.1f}%, max {:.1f}% of a core over {} rows; {} verdicts",
                                rows_.empty() ? 0.0 : cpu_sum / static_cast<double>(rows_.size()), cpu_max,
                                rows_.size(), verdicts));
  summary.push_back(
      fmt::format("Drops: queue {} expected / {} unexpected, loss {} expected / {} unexpected; NFQUEUE kernel drops {} "
                  "(queue full) + {} (undelivered); "
                  "interface drops {}; queue drops were ruled out in {} of {} WAN pair-seconds, loss drops in {} -> {}",
                  q_exp, q_unexp, l_exp, l_unexp, kq_full, kq_undelivered, iface, q_ruled_out, slices, l_ruled_out,
                  drops_ok ? "ONLY CONFIGURED DROPS" : "UNEXPLAINED DROPS"));
  summary.push_back(leftovers.empty()
                        ? fmt::format("Leftovers after `wanlab down` ({:.1f} s): none -> NOTHING LEFT", down.seconds)
                        : fmt::format("Leftovers after `wanlab down`: {} -> LEFTOVERS", fmt::join(leftovers, "; ")));
  const bool streams_ok = totals_.long_failures == 0;
  summary.push_back(
      fmt::format("Streams: {} long perf clients, {} ended early ({} restarted) -> {}; short clients {} started, {} "
                  "finished, {} killed "
                  "on purpose, {} failed",
                  6, totals_.long_failures, totals_.long_restarts, streams_ok ? "KEPT UP" : "BROKE",
                  totals_.short_started, totals_.short_finished, totals_.short_killed, totals_.short_failed));
  summary.push_back(fmt::format(
      "Host processes: {} sleepers started ({} SIGTERMed, {} SIGKILLed, the rest left for `down`), {} `setsid -f "
      "sleep` "
      "escapes left for `down`; {} processes were in the testbed's namespaces at `down`",
      totals_.sleepers_started, totals_.sleepers_termed, totals_.sleepers_killed, totals_.escapes, traces.processes()));
  if (!totals_.set_ms.empty()) {
    const auto minute = static_cast<std::ptrdiff_t>(std::min<std::size_t>(60, totals_.set_ms.size()));
    auto first = [&](const std::vector<double>& all) { return mean({all.begin(), all.begin() + minute}); };
    auto last = [&](const std::vector<double>& all) { return mean({all.end() - minute, all.end()}); };
    summary.push_back(
        fmt::format("`wanlab set`: {} calls, {} failed; CPU time {:.1f} ms each over the first {} calls, {:.1f} ms "
                    "over the last {} "
                    "(wall {:.0f} ms, {:.0f} ms: the machine's load)",
                    totals_.sets, totals_.set_failures, first(totals_.set_cpu_ms), minute, last(totals_.set_cpu_ms),
                    minute, first(totals_.set_ms), last(totals_.set_ms)));
  }
  const bool pass = memory_flat && fds_flat && drops_ok && leftovers.empty() && streams_ok && totals_.set_failures == 0;
  summary.push_back(
      fmt::format("Verdict: {}", pass ? "PASS (memory flat, only configured drops, nothing left)" : "FAIL"));
  for (const auto& track : pairs_)
    for (std::size_t i = 0; i < track.unexplained.size() && i < 5; ++i)
      summary.push_back(fmt::format("  unexplained on {}: {}", track.label, track.unexplained[i]));
  for (const auto& error : totals_.long_errors) summary.push_back("  " + error);
  for (const auto& error : totals_.short_errors) summary.push_back("  " + error);
  for (const auto& error : totals_.set_errors) summary.push_back("  " + error);

  Table table;
  table.title = "Soak";
  table.header = kHeader;
  for (const auto& row : rows_) table.rows.push_back(row_cells(row));
  fmt::print("\n{}\n", table.text());
  for (const auto& line : summary) fmt::print("{}\n", line);
  const double run_seconds = seconds_since(run_start);
  write_outputs(summary, leftovers, run_seconds, load_start, load_average(), machine, client_rows);
  return pass ? 0 : 3;
}

void Soak::write_outputs(const std::vector<std::string>& summary, const std::vector<std::string>& leftovers_found,
                         double run_seconds, const std::string& load_start, const std::string& load_end,
                         const MachineInfo& machine, const std::vector<std::vector<std::string>>& client_rows) {
  (void)leftovers_found;
  if (!config_.csv.empty()) {
    wanlab::base::write_output_file(config_.csv, [&](std::ostream& out) {
    out << "t_s,releaser_cpu_pct_of_core,rss_mib,fds,threads,verdicts,held,wan_packets,wan_mbit,queue_drops_expected,"
           "queue_drops_unexpected,"
           "loss_drops_expected,loss_drops_unexpected,nfqueue_queue_full,nfqueue_undelivered,nfqueue_waiting,interface_"
           "drops,set_cpu_ms_mean,"
           "set_ms_mean,set_ms_max,"
           "set_failures,host_processes,machine_busy_pct,machine_softirq_pct,machine_steal_pct,load1\n";
    for (const auto& row : rows_)
      out << fmt::format(
          "{:.0f},{:.2f},{:.3f},{},{},{},{},{},{:.2f},{},{},{},{},{},{},{},{},{:.2f},{:.2f},{:.2f},{},{},{:.1f},{:.1f},"
          "{:.1f},{}\n",
          row.t, row.cpu.process_pct_of_core, row.daemon.rss_mib, row.daemon.fds, row.daemon.threads, row.verdicts,
          row.held, row.wan_packets, row.wan_mbit, row.queue_expected, row.queue_unexpected, row.loss_expected,
          row.loss_unexpected, row.kernel_queue_full, row.kernel_undelivered, row.waiting_in_kernel, row.iface_drops,
          row.set_cpu_ms_mean, row.set_ms_mean, row.set_ms_max, row.set_failures, row.host_processes,
          row.cpu.system_pct_of_all, row.cpu.softirq_pct_of_all, row.cpu.steal_pct_of_all, row.load1);
    });
    fmt::print("csv written to {}\n", config_.csv);
  }
  if (config_.markdown.empty()) return;
  wanlab::base::write_output_file(config_.markdown, [&](std::ostream& out) {
  out << "# wanlab soak benchmark\n\n";
  out << fmt::format(
      "- Date: {}\n- Machine: {}; {} CPUs ({}); {:.1f} GiB memory\n- Release path: {}\n- Scenario: `{}` brought up as "
      "`{}`\n"
      "- Load average (1/5/15 min) at start: {}; at end: {}\n- Soak: {:.0f} s; whole run {:.0f} s\n- Command: `{}`\n\n",
      now_text(), machine.kernel, machine.cpus, machine.cpu_model, machine.memory_gib, release_path_,
      fs::path(config_.scenario).filename().string(), config_.name, load_start, load_end, config_.seconds, run_seconds,
      config_.command);
  out << "## Summary\n\n";
  for (const auto& line : summary) out << "- " << line << "\n";
  out << "\n## What ran\n\n"
      << "- **Streams:** a `wanlab perf server` on host 0 of each DC; on host 1 of each DC a `wanlab perf client` to "
         "host 0 of each other DC "
         "(2 streams, cubic) for the whole soak: 6 directed WAN pairs always loaded. Every fourth second a short "
         "client (3 s, 1 stream) from host 0 "
         "to another DC's host 0, every other one SIGKILLed after 1.5 s; at most one at a time.\n"
      << "- **Changes:** every second one `wanlab set` on one DC pair in turn (east-west, east-europe, west-europe), "
         "both directions (every fourth "
         "round one direction, `--one-way`), setting all of rate "
      << fmt::format("{}", fmt::join(kRates, "/")) << ", one-way delay " << fmt::format("{}", fmt::join(kDelays, "/"))
      << ", loss " << fmt::format("{}", fmt::join(kLosses, "/")) << ", jitter "
      << fmt::format("{}", fmt::join(kJitters, "/")) << " and queue " << fmt::format("{}", fmt::join(kQueues, "/"))
      << " on cycles of different lengths.\n"
      << "- **Host processes:** through `wanlab exec`, a `sleep` started every 4 s on the hosts in turn, the oldest "
         "ended (SIGTERM and SIGKILL in "
         "turn) while three run; every 12 s a `setsid -f sleep` that leaves the soak's process tree (12 at most), so "
         "that `down` must find and end "
         "it; the perf servers and the remaining sleepers are left running for `down` too.\n"
      << "- **Samples:** every " << config_.sample_seconds
      << " s the daemon's CPU time (/proc/PID/stat), VmRSS and thread count (/proc/PID/status), open descriptors "
         "(/proc/PID/fd), the releaser's "
         "verdict count and held packets (releaser.toml), the kernel's NFQUEUE counters "
         "(/proc/PID/net/netfilter/nfnetlink_queue in the "
         "daemon's namespace), every testbed interface's rx and tx drops (/proc/net/dev in the core and host "
         "namespaces), and the machine's CPU "
         "(/proc/stat).\n\n";
  out << "## When a drop is explained\n\n"
      << "The data plane's counters are read for every directed pair once a second, just before that second's `set`; "
         "each one-second slice is "
         "judged against the configurations in force during it (the one before the `set` and the one after it), read "
         "back from the data plane's "
         "`pair_config` map rather than from what the soak asked for.\n\n"
      << "- **Loss drops** are explained in a slice where the pair's loss probability was above 0.\n"
      << "- **Queue drops** are explained in a slice where the pair's queue limit (in time, as the data plane holds "
         "it) was below the longest "
         "backlog the pair's senders could build: 2 x streams x (tcp_wmem max + 64 KiB) x 1514/1448 x 8 / the slowest "
         "rate the pair has had so "
         "far. A TCP sender holds at most its send buffer unacknowledged (plus one 64 KiB skb of overshoot), every "
         "queued byte was charged at no "
         "less than that slowest rate, and the factor 2 covers segments queued twice (a spurious retransmission). "
         "Here: 3 streams (a long client's "
         "2 + one short client), tcp_wmem max "
      << fmt::format("{:.1f} MiB", static_cast<double>(wmem_) / 1048576.0) << ", so at the slowest rate, "
      << fmt::format("{:.0f} Mbit/s", kSlowestRateBps / 1e6) << ", "
      << fmt::format("{:.1f} s", QueueBound{3, wmem_, kSlowestRateBps}.backlog_ns() / 1e9)
      << ": the `12s` queue cannot overflow, and a queue drop under it is unexplained. Every other queue setting here "
         "can overflow.\n"
      << "- **NFQUEUE kernel drops** (the queue full, or a packet's message not delivered to the releaser's socket) "
         "and **interface drops** are "
         "never configured: any is unexplained.\n\n";
  Table table;
  table.title = fmt::format("Every {} s (drops and verdicts in the row's interval; RSS, fds, threads, held at its end)",
                            config_.sample_seconds);
  table.header = kHeader;
  for (const auto& row : rows_) table.rows.push_back(row_cells(row));
  table.notes = {
      "Releaser CPU = the daemon's user + system time over the interval, % of one core. Verdicts = packets the "
      "releaser released. "
      "Held = packets waiting in the releaser at the row's end.",
      "WAN packets / Mbit/s = what the data plane passed on the six inter-DC pairs (a GSO packet counts its segments; "
      "wire bytes).",
      "Drops exp / unexp: explained by the configuration in force / not (see above). `set` = each `wanlab set` process "
      "(the change recorded, the data plane rewritten): its own CPU time, and its wall time, which the machine's load "
      "stretches.",
      "Host processes = processes the soak started on the hosts that were running at the row's end (perf servers and "
      "clients, sleepers; "
      "not the escaped ones). Machine busy / steal = both CPUs, all processes and the kernel / taken by the "
      "hypervisor."};
  out << table.markdown() << "\n";
  Table clients;
  clients.title = "Long perf clients (their own reports at the end)";
  clients.header = {"Pair", "Exit status", "Seconds", "MB acknowledged", "Goodput (Mbit/s)", "Retransmits"};
  clients.rows = client_rows;
  out << clients.markdown();
  });
  fmt::print("markdown written to {}\n", config_.markdown);
}

// ---------------------------------------------------------------- main

Config parse_args(int argc, char** argv) {
  Config config;
  config.wanlab = (fs::path(base::self_exe()).parent_path().parent_path() / "cli" / "wanlab").string();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": expected a value");
      return argv[++i];
    };
    auto number = [&](double min, double max) {
      const std::string text = value();
      try {
        return wanlab::base::parse_decimal(text, min, max);
      } catch (const std::exception& error) {
        throw std::invalid_argument(arg + ": " + error.what());
      }
    };
    if (arg == "--wanlab") {
      config.wanlab = value();
    } else if (arg == "--scenario") {
      config.scenario = value();
    } else if (arg == "--name") {
      config.name = value();
    } else if (arg == "--minutes") {
      config.seconds = 60 * number(0.5, 24 * 60);
    } else if (arg == "--seconds") {
      config.seconds = number(20, 24 * 3600);
    } else if (arg == "--sample-seconds") {
      config.sample_seconds = static_cast<int>(number(1, 600));
    } else if (arg == "--warmup-seconds") {
      config.warmup_seconds = number(0, 3600);
    } else if (arg == "--markdown") {
      config.markdown = output_file_option(arg, value());
    } else if (arg == "--csv") {
      config.csv = output_file_option(arg, value());
    } else if (arg == "--command") {
      config.command = value();
    } else {
      throw std::invalid_argument(
          "unknown argument \"" + arg +
          "\" (--scenario FILE, --wanlab PATH, --name NAME, --minutes N, --seconds N, --sample-seconds N, "
          "--warmup-seconds N, --markdown FILE, --csv FILE, --command TEXT)");
    }
  }
  if (config.scenario.empty())
    throw std::invalid_argument("--scenario: a three-DC scenario file is needed (scenarios/three-dc.toml)");
  config.wanlab = fs::absolute(config.wanlab).string();
  config.scenario = fs::absolute(config.scenario).string();
  if (::access(config.wanlab.c_str(), X_OK) != 0)
    throw std::invalid_argument("--wanlab: " + config.wanlab + " is not an executable (build the wanlab target)");
  // The warm-up must leave rows to judge.
  config.warmup_seconds = std::min(config.warmup_seconds, config.seconds / 2);
  return config;
}

int run(int argc, char** argv) {
  const Config config = parse_args(argc, argv);
  if (::geteuid() != 0) throw std::runtime_error("needs root (namespaces, tc, iptables)");
  install_signal_cleanup(config.wanlab);
  WorkDir work("wanlab-soak");
  remove_on_signal(work.path);
  Soak soak(config, work.path);
  return soak.run();
}

}  // namespace

int main(int argc, char** argv) { return wanlab::bench::main_of("wanlab_soak_bench", run, argc, argv); }
