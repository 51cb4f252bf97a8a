// The load the soak drives through the real `wanlab` binary: `wanlab perf`
// streams on every directed DC pair all the way through, short perf clients,
// processes started and killed on the emulated hosts (`wanlab exec`), and a
// `wanlab set` every second (changes.hpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "soak/config.hpp"
#include "soak/sampler.hpp"
#include "wanlab/base/process.hpp"

namespace wanlab::bench::soak {

using Clock = std::chrono::steady_clock;

enum class Kind { server, long_client, short_client, sleeper, escape };

// A process the soak started on a host; its Child kills and reaps it if the
// soak ends before it does.
struct HostProcess {
  Kind kind = Kind::sleeper;
  std::string label;
  base::Child child;
  pid_t pid = 0;  // kept for messages once reaped
  Clock::time_point started;
  std::string log;
  int pair = -1;  // long and short clients: the directed pair they load
  std::optional<Clock::time_point> kill_at;
  int signal_sent = 0;
  bool reaped = false;
  int status = 0;  // exit status, 128 + signal
};

struct LoadTotals {
  int sets = 0, set_failures = 0;
  std::vector<std::string> set_errors;
  int long_failures = 0, long_restarts = 0;
  std::vector<std::string> long_errors;
  int short_started = 0, short_killed = 0, short_finished = 0, short_failed = 0;
  std::vector<std::string> short_errors;
  int sleepers_started = 0, sleepers_termed = 0, sleepers_killed = 0, escapes = 0;
  std::vector<double> set_ms, set_cpu_ms;  // every call: wall time, the process's CPU time
};

// A long client's own report (`wanlab perf --json`), read from its log.
struct ClientReport {
  std::string label;
  std::string exit_status;  // "0", "still running"
  std::optional<double> seconds, bytes, goodput_bps, retransmits;
};

class Load {
 public:
  // Long clients: 2 streams each; short ones 1, at most one at a time.
  static constexpr int kWanStreams = 3;
  static constexpr int kLongClients = 6;

  Load(const Config& config, const emulator::TestbedState& state, std::string work_dir);

  // A perf server on host 0 of each DC, a second for them to listen, then
  // the soak's time 0 and a long client on every directed WAN pair.
  void start();
  Clock::time_point start_time() const { return start_; }
  // Each second: reap what ended, one host-process action, one `set`.
  void reap();
  void churn(int tick);
  SetCall apply_change(int tick);
  // At the end: the long clients end by themselves; up to `limit` for them.
  void wait_for_long_clients(std::chrono::seconds limit);
  // After `down`: reaps our children it ended, so that no zombie counts.
  void reap_after_down(std::chrono::seconds limit);

  // Processes we started that run now, the escaped ones not counted.
  int host_processes() const;
  int unreaped() const;
  std::vector<std::string> not_ended() const;  // "child 123 (sleep on east-0) not ended"
  std::vector<ClientReport> client_reports() const;
  const LoadTotals& totals() const { return totals_; }

 private:
  HostProcess& launch(Kind kind, std::string label, const emulator::Host& host, std::vector<std::string> argv,
                      std::string log = "");
  void start_long_client(int pair, double seconds);
  void start_sleeper(int cycle);
  void end_a_sleeper(int cycle);
  void start_short_client(int cycle);
  void start_escape(int cycle);
  void ended(HostProcess& p, double remaining);
  const emulator::Host& host(int dc, int index) const;
  std::string ip_of(int dc) const;
  int running(Kind kind) const;

  const Config& config_;
  const emulator::TestbedState& state_;
  std::string work_;
  int dcs_ = 0;
  Clock::time_point start_;
  std::deque<HostProcess> processes_;  // a deque: adding one moves none, so references stay good
  LoadTotals totals_;
};

}  // namespace wanlab::bench::soak
