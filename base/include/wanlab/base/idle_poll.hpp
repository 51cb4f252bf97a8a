// An idle CPU of a virtual machine halts, and a timer that fires on it then
// waits for the hypervisor to run the CPU again: on the project's 2-core VM
// the nfqueue releaser's timers woke more than 300 us late in 4-8% of its
// wake-ups during a run, and 1.3-3.2% of its verdicts left more than 100 us
// late. A CPU that never halts wakes its timers sooner. IdlePollers keep
// every CPU the process may use busy with a process that only spins, at
// SCHED_IDLE: the scheduler runs it only when nothing else wants that CPU and
// stops it as soon as something does, as the kernel's own idle polling
// (cpuidle-haltpoll, idle=poll) would. With them the same runs' late verdicts
// fell to 0.5-1.2% (bench/results/bubbletea/releaser-20261201/counters.md).
//
// SCHED_IDLE holds only among the tasks of one cpu cgroup: across cgroups the
// scheduler weighs groups, and spinners in the root cgroup made periodic
// processes in a container's cgroup wake up to a second late
// (bench/results/harness/20261204-auto/cgroups/). So the pollers are
// processes, not threads (cgroup v2 keeps a process's threads in one
// cgroup), in a cpu cgroup of their own named wanlab-idle-<our pid>, made
// idle (cpu.idle = 1) at the top of the cpu hierarchy: the group yields to
// every other group as its tasks yield within it. Where no such cgroup can be
// made there are no pollers, and why_none() says why.
//
// Their CPU time is idle time spent spinning: busy_ticks() says how much, so
// that a measure of how busy the machine is can leave it out. Even so, busy
// runs fared worse polled all along, so a run pauses them while its own work
// keeps the CPUs busy (set_active; the rule is harness/run's HealthProbe,
// docs/RUNTIME.md#idle-polling).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace wanlab::base {

class IdlePollers {
 public:
  // One poller per CPU of the process's affinity mask, each pinned to its
  // CPU. They die with the thread that made them (PR_SET_PDEATHSIG), so make
  // them on one that outlives them.
  IdlePollers();
  ~IdlePollers();  // kills and reaps them, removes their cgroup
  IdlePollers(const IdlePollers&) = delete;
  IdlePollers& operator=(const IdlePollers&) = delete;

  // The pollers running (a CPU whose poller could not be pinned or made
  // SCHED_IDLE has none: it would compete with real work).
  std::size_t count() const { return pids_.size(); }
  // With none: why ("no cpu cgroup hierarchy is mounted", ...); else "".
  const std::string& why_none() const { return why_none_; }
  // Their cgroup's directory ("" with none).
  const std::string& cgroup() const { return cgroup_; }
  const std::vector<pid_t>& pids() const { return pids_; }
  // Their CPU time so far, in /proc/stat's clock ticks (sysconf(_SC_CLK_TCK)).
  std::uint64_t busy_ticks() const;
  // Paused pollers sleep (on a futex) until resumed: they start active.
  void set_active(bool active);
  bool active() const;

 private:
  void stop();

  struct Shared;              // the words the pollers read, in memory shared with them
  Shared* shared_ = nullptr;  // mmap'd before the pollers are forked
  std::vector<pid_t> pids_;
  std::string cgroup_;
  std::string why_none_;
};

// The cgroup directories of pollers whose process is gone (a wanlab that was
// killed: its pollers died with it, their cgroup stays), removed; returns
// what it removed. `wanlab down` and every new IdlePollers call it.
std::vector<std::string> remove_stale_idle_cgroups();

// Every idle pollers' cgroup there is now, live or stale (for tests).
std::vector<std::string> idle_cgroups_found();

}  // namespace wanlab::base
