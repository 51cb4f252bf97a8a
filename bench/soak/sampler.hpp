// What the soak reads every sample (a row): the releaser daemon's CPU,
// memory, descriptors and threads (/proc), its verdicts and held packets
// (releaser.toml), the WAN pairs' packets and rate, the drops judged since
// the last row (drops.hpp), the kernel's NFQUEUE and interface drops, the
// `wanlab set` calls' times, and the machine's CPU and load.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "soak/drops.hpp"
#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::bench::soak {

struct DaemonSample {
  double rss_mib = 0;
  int fds = 0;
  int threads = 0;
};
DaemonSample daemon_sample(pid_t pid);

// The kernel's NFQUEUE counters for our queue, from the daemon's namespace:
// packets dropped because the queue was full, and because the message could
// not be delivered to the releaser's socket (its buffer full).
struct KernelQueueDrops {
  std::uint64_t queue_full = 0, undelivered = 0, waiting = 0;
};
KernelQueueDrops kernel_queue_drops(pid_t daemon, std::uint16_t queue_num);

// Packets dropped by the interfaces (rx + tx) of the namespaces.
std::uint64_t interface_drops(const std::vector<std::string>& namespaces);

// One sample: drops and verdicts over the row's interval; RSS, fds, threads,
// held at its end.
struct Row {
  double t = 0;
  CpuMeter::Usage cpu;
  DaemonSample daemon;
  std::uint64_t held = 0, verdicts = 0;
  std::uint64_t wan_packets = 0;
  double wan_mbit = 0;
  DropCounts drops;
  std::uint64_t kernel_queue_full = 0, kernel_undelivered = 0, iface_drops = 0;
  std::uint64_t waiting_in_kernel = 0;
  double set_ms_mean = 0, set_ms_max = 0, set_cpu_ms_mean = 0;
  int set_failures = 0;
  int host_processes = 0;
  std::string load1;
};

// One `wanlab set` process: its wall and CPU time, and whether it failed.
struct SetCall {
  double ms = 0;
  double cpu_ms = 0;
  bool failed = false;
};

class Sampler {
 public:
  // The first row's interval starts now; `wan_now` is what the WAN pairs had passed.
  Sampler(const emulator::TestbedState& state, const wanlab_pair_stats& wan_now);

  void add(const SetCall& call);
  void add(const DropCounts& slice) { drops_ += slice; }
  // The row that ends now, `t` seconds into the soak; the next starts.
  Row sample(double t, const wanlab_pair_stats& wan_now, int host_processes);

 private:
  void take_counters(Row& row, const wanlab_pair_stats& wan_now);
  void take_sets(Row& row);

  const emulator::TestbedState& state_;
  std::vector<std::string> namespaces_;
  // At the start of the current row, or accumulated since.
  std::optional<CpuMeter> cpu_;
  emulator::ReleaserStats releaser_{};
  KernelQueueDrops kernel_{};
  std::uint64_t iface_ = 0;
  wanlab_pair_stats wan_{};
  DropCounts drops_;
  std::vector<double> set_ms_, set_cpu_ms_;
  int set_failures_ = 0;
};

double mean(const std::vector<double>& values);

}  // namespace wanlab::bench::soak
