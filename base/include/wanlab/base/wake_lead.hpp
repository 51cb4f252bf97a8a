// Waking from a timer takes tens of microseconds on a VM, more under load
// (120-170 us at p50 on the project's 2-core VM, idle: bench/run-wake-bench.sh). A wait that must end
// on time (a packet's departure, an emulated GPU op's end) sets its timer that
// much early, as measured so far, and spends the rest spinning: it then ends
// on time instead of one wake-up late.
#pragma once

#include <cstdint>

namespace wanlab::base {

class WakeLead {
 public:
  // The lead's bounds: never spin longer than kMaxNs for one wait, and aim at
  // least kMinNs early even when the last wake-ups were punctual.
  static constexpr std::uint64_t kMinNs = 20'000;
  static constexpr std::uint64_t kMaxNs = 250'000;

  // How early to set the next timer: twice the mean latency so far, within bounds.
  std::uint64_t lead_ns() const { return lead_ns_; }
  // One wake-up's latency: how long after the time it was set for the timer woke.
  void learn(std::uint64_t latency_ns);

 private:
  std::uint64_t latency_ewma_ns_ = 50'000;
  std::uint64_t lead_ns_ = 100'000;
};

// One turn of a busy-wait: tells the CPU (and a hypervisor) that this thread spins.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Busy-waits until CLOCK_MONOTONIC reads `at_ns` or later; returns that reading.
std::int64_t spin_until_ns(std::int64_t at_ns);

}  // namespace wanlab::base
