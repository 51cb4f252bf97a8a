// What a real run measures about the machine beside its workers, for the
// emulation's verdict (record/health.hpp): the box's CPUs, sampled every
// interval on a thread of its own, and the nfqueue releaser's counters from
// the run's start to its end.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "wanlab/base/cpu_times.hpp"
#include "wanlab/base/idle_poll.hpp"
#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/harness/record/health.hpp"
#include "wanlab/harness/run/run.hpp"

namespace wanlab::harness::run_detail {

using base::CpuTimes;  // /proc/stat's, read by base/cpu_times.hpp
// The smallest one-way delay between two different DCs of `scenario`, before
// events (0 with a single DC).
std::uint64_t smallest_wan_delay_ns(const emulator::Scenario& scenario);
ReleaserLateness lateness_between(const emulator::LateCounts& before, const emulator::LateCounts& after);
// Each DC pair's releaser verdicts between two readings of releaser.toml.
std::vector<PairReleaserLateness> pair_lateness(const emulator::ReleaserStats& before,
                                                const emulator::ReleaserStats& after);

// IdlePoll::automatic's rule: poll while the run's own work (the pollers'
// time left out) kept less than this share of the box's CPUs busy over the
// last kPollDecisionInterval. On the 2-core VM, with the pollers in their
// idle cgroup (base/idle_poll.hpp): polled all along, every random BubbleTea
// run kept up (busiest 69% on average), but two of the eleven three-DC runs
// fell behind at 70% and 80% (workers woke 1.1-2.3% of compute late) that
// kept up with this rule; before the cgroup, polling hurt from 45% up. The
// line is fitted to those runs, not derived (docs/RUNTIME.md#idle-polling).
inline constexpr double kIdlePollBusyLimit = 0.4;
inline constexpr std::chrono::milliseconds kPollDecisionInterval{250};
inline bool idle_polling_pays(double busy_share_but_polling) { return busy_share_but_polling < kIdlePollBusyLimit; }

class HealthProbe {
 public:
  // Starts sampling. `testbed` is the run's own: its releaser's counters, if
  // it has one, are read now and at finish().
  // Unless IdlePoll::off, IdlePollers spin in the CPUs' idle time until
  // finish() (with automatic, only while idle_polling_pays), and the CPU
  // samples leave their time out.
  HealthProbe(const emulator::TestbedState& testbed, const emulator::Scenario& scenario, IdlePoll idle_poll,
              std::chrono::milliseconds interval = std::chrono::milliseconds(500));
  ~HealthProbe();
  HealthProbe(const HealthProbe&) = delete;
  HealthProbe& operator=(const HealthProbe&) = delete;

  // Stops sampling and adds what it measured to `samples`.
  void finish(EmulationSamples& samples);

 private:
  void sample();
  void stop();
  std::optional<CpuTimes> cpu_times_but_polling() const;

  std::string releaser_path_;
  std::string release_path_;
  std::uint64_t smallest_wan_delay_ns_ = 0;
  std::optional<emulator::ReleaserStats> releaser_before_;
  std::chrono::milliseconds interval_;
  std::optional<base::IdlePollers> idle_pollers_;
  int idle_pollers_running_ = 0;
  IdlePoll idle_poll_ = IdlePoll::off;
  int decisions_ = 0;         // with automatic: kPollDecisionInterval's passed
  int decisions_polled_ = 0;  // and those the pollers spent active
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<double> busy_;    // guarded by mutex_
  std::vector<double> stolen_;  // guarded by mutex_
  std::thread thread_;        // last: started once the rest is ready
};

}  // namespace wanlab::harness::run_detail
