// Whether a real run's emulation kept up: what the run measured about its own
// machinery (the workers' timer wake-ups, the nfqueue releaser's verdicts, the
// box's CPUs), and the verdict it prints and results.json carries as
// "emulation". docs/RUNTIME.md#emulation-health says why each limit is where
// it is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wanlab::harness {

// The nfqueue releaser's verdicts given during a run: how many, and how many
// left later than each bound after their departure time (base::kLateBoundsNs;
// a results.json written before the finer bounds has 10 us, 100 us, 300 us,
// 1 ms, 3 ms and 10 ms only).
struct ReleaserLateness {
  std::uint64_t verdicts = 0;
  std::map<std::uint64_t, std::uint64_t> over;  // bound (ns) -> verdicts later than it
  std::uint64_t max_ns = 0;   // the latest verdict since the testbed came up
  std::uint64_t dropped = 0;  // packets the kernel dropped before the releaser had them (queue or socket full)
  bool operator==(const ReleaserLateness&) const = default;
};

// The same verdicts of one DC pair (packets from a host of `from` to a host
// of `to`); max_ns is the pair's latest since the testbed came up.
struct PairReleaserLateness {
  std::string from;
  std::string to;
  ReleaserLateness late;
  bool operator==(const PairReleaserLateness&) const = default;
};

// What a real run measured about itself (RunRecord::emulation).
struct EmulationSamples {
  // Per compute op of every worker: how long after the op's planned end the
  // worker's timer woke it. Whatever comes next starts that much later.
  std::vector<std::int64_t> wake_late_ns;
  std::int64_t compute_ns = 0;  // the planned length of those ops, summed
  // The box's CPUs (all of them, /proc/stat): the share busy in each sampling
  // interval of the run.
  std::vector<double> cpu_busy;
  // The share of each of those intervals the hypervisor ran other guests on
  // the CPUs (/proc/stat's steal; inside cpu_busy): none on bare metal.
  std::vector<double> cpu_stolen;
  double cpu_interval_s = 0;
  int cpus = 0;
  // CPUs whose idle time IdlePollers spent spinning (base/idle_poll.hpp);
  // cpu_busy leaves that time out.
  int idle_pollers = 0;
  // The share of the run they were active (IdlePoll::automatic pauses them).
  double idle_polled_share = 0;
  std::string release_path;                          // "fq" or "nfqueue"
  std::optional<ReleaserLateness> releaser;          // the nfqueue path only
  std::vector<PairReleaserLateness> releaser_pairs;  // those with verdicts in the run
  // The smallest one-way delay between two of the run's DCs (0: unknown,
  // taken as 5 ms): what a verdict's lateness is measured against.
  std::uint64_t smallest_wan_delay_ns = 0;
};

// Where "kept up" ends. A figure a run reports is compared with another at 2%
// (an iteration with prefill against one without), so the emulation may add
// at most half of that to what it emulates.
struct HealthLimits {
  // Late wake-ups, summed, as a share of the compute they end.
  double wake_late_share = 0.01;
  // The share of releaser verdicts that may leave later than 2% of the run's
  // smallest WAN delay, judged at the largest of base::kLateBoundsNs at most
  // that (100 us for 5 ms, 200 us for 11 ms, 600 us for 33 ms): never more
  // than a quarter below it.
  double releaser_late_share = 0.01;
  double releaser_late_of_delay = 0.02;
  // Each DC pair with at least this many verdicts is judged on its own at
  // the same share: one slow link's transfers are late however punctual the
  // rest. Fewer, and a single late verdict or two would decide.
  std::uint64_t releaser_pair_verdicts = 1000;
  // A box whose CPUs are this busy in most of the run's intervals has no room
  // for the kernel's own packet timing, which no counter shows on the fq path.
  double cpu_busy = 0.95;
  double cpu_saturated_share = 0.5;
};

// results.json "emulation": the figures the verdict rests on, and the verdict.
struct EmulationHealth {
  bool kept_up = true;
  std::string verdict;  // the line the run prints last
  std::size_t compute_ops = 0;
  double wake_late_p50_ms = 0;
  double wake_late_p99_ms = 0;
  double wake_late_max_ms = 0;
  double wake_late_share = 0;  // of the planned compute
  int cpus = 0;
  int idle_pollers = 0;            // CPUs whose idle time was spent polling (EmulationSamples)
  double idle_polled_share = 0;    // the share of the run they were active
  double cpu_mean = 0;             // share busy, mean over the intervals
  double cpu_max = 0;              // the busiest interval
  double cpu_saturated_share = 0;  // intervals at least HealthLimits::cpu_busy busy
  double cpu_stolen_mean = 0;      // share the hypervisor took (EmulationSamples::cpu_stolen), mean
  double cpu_stolen_max = 0;       // and in the interval it took most
  std::string release_path;
  std::optional<ReleaserLateness> releaser;
  std::vector<PairReleaserLateness> releaser_pairs;
  std::uint64_t releaser_limit_ns = 0;  // the lateness judged (one of the bounds); 0 without a releaser
  bool operator==(const EmulationHealth&) const = default;
};

EmulationHealth judge_emulation(const EmulationSamples& samples, const HealthLimits& limits = {});

// The share of `r`'s verdicts later than `bound_ns`, one of its counters'
// bounds (EmulationHealth::releaser_limit_ns); nothing for a bound it has no
// counter for.
std::optional<double> releaser_late_share(const ReleaserLateness& r, std::uint64_t bound_ns);

}  // namespace wanlab::harness
