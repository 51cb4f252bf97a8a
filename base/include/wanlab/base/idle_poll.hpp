// An idle CPU of a virtual machine halts, and a timer that fires on it then
// waits for the hypervisor to run the CPU again: on the project's 2-core VM
// the nfqueue releaser's timers woke more than 300 us late in 4-8% of its
// wake-ups during a run, and 1.3-3.2% of its verdicts left more than 100 us
// late. A CPU that never halts wakes its timers sooner. IdlePollers keep
// every CPU the process may use busy with a thread that only spins, at
// SCHED_IDLE: the scheduler runs it only when nothing else wants that CPU and
// stops it as soon as something does, as the kernel's own idle polling
// (cpuidle-haltpoll, idle=poll) would. With them the same runs' late verdicts
// fell to 0.5-1.2% (bench/results/bubbletea/releaser-20261201/counters.md). Their CPU time is idle
// time spent spinning: busy_ticks() says how much, so that a measure of how
// busy the machine is can leave it out. A trade: on busy runs the same VM's
// workers, each in a container's cpu cgroup, woke tens of milliseconds late
// with them (SCHED_IDLE holds only within the pollers' own cgroup), so a run
// pauses them while its own work keeps the CPUs busy (set_active; the rule
// is harness/run's HealthProbe, docs/RUNTIME.md#idle-polling).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace wanlab::base {

class IdlePollers {
 public:
  // One poller per CPU of the process's affinity mask, each pinned to its CPU.
  IdlePollers();
  ~IdlePollers();  // stops and joins them
  IdlePollers(const IdlePollers&) = delete;
  IdlePollers& operator=(const IdlePollers&) = delete;

  // The pollers running (a CPU whose poller could not be pinned or made
  // SCHED_IDLE has none: it would compete with real work).
  std::size_t count() const { return running_; }
  // Their CPU time so far, in /proc/stat's clock ticks (sysconf(_SC_CLK_TCK)).
  std::uint64_t busy_ticks() const;
  // Paused pollers sleep (on a futex) until resumed: they start active.
  void set_active(bool active);
  bool active() const { return active_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> stopping_{false};
  std::atomic<bool> active_{true};
  std::vector<std::thread> threads_;
  std::vector<clockid_t> clocks_;  // each running poller's CPU-time clock
  std::size_t running_ = 0;
};

}  // namespace wanlab::base
