// An emulated GPU: a timeline of busy intervals on CLOCK_MONOTONIC. Training
// compute reserves it for the planned duration and waits until the planned
// end (it is emulated: nothing is computed). Because the GPU knows when it is
// busy, the gaps between its intervals (the pipeline's bubbles) can be listed
// and reserved by other work, such as BubbleTea's prefill requests, without
// overlapping training.
#pragma once

#include <algorithm>
#include <array>
#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "wanlab/base/clock.hpp"
#include "wanlab/base/wake_lead.hpp"

namespace wanlab::harness {

namespace run_detail {
class GpuLease;
}

// The GPU's timeline and every record are on base's clock (CLOCK_MONOTONIC ns).
using base::monotonic_ns;

// The largest of the last kSamples values learned (0 before any): about the
// p99 of what it samples, the share that the TTFT p99 target leaves late.
class RecentMax {
 public:
  static constexpr std::size_t kSamples = 100;
  void learn(std::uint64_t value) { values_[count_++ % kSamples] = value; }
  std::uint64_t max() const;

 private:
  std::array<std::uint64_t, kSamples> values_{};
  std::size_t count_ = 0;  // values learned, all time
};

class EmulatedGpu {
 public:
  // A compute spins for at most 1/kSpinShareDivisor of its length: the CPU
  // an emulated op may cost beside the box's other work, twice the 1% of
  // compute that late wake-ups may add before a run is said to fall behind.
  static constexpr std::uint64_t kSpinShareDivisor = 50;

  struct Interval {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::string what;  // "F3", "B3", "prefill 12"
    // compute() only: how long the other process's hold put the start off,
    // and how late after the end the timer woke this process.
    std::int64_t delayed_ns = 0;
    std::int64_t woke_late_ns = 0;
  };

  // Reserves [start_ns, start_ns + duration_ns). Throws std::logic_error if it
  // overlaps an interval already reserved.
  const Interval& reserve(std::int64_t start_ns, std::uint64_t duration_ns, std::string what);
  // Reserves `duration_ns` from now (or from the end of the last interval if
  // that is later) and waits on `executor` until the interval ends: on a
  // timer set a wake-up's latency early (base::WakeLead, at most
  // 1/kSpinShareDivisor of the op, the most the wait spins), then spinning.
  // Returns the interval: its end is the planned end, whatever the timer's
  // wake-up lag.
  // With a lease, `hold_ns` keeps the shared GPU from the other process that
  // long past the end, for this process's next compute (GpuLease::reserve).
  asio::awaitable<Interval> compute(asio::any_io_executor executor, std::uint64_t duration_ns, std::string what,
                                    std::uint64_t hold_ns = 0);

  // Shares the GPU with another process through `lease` (not owned; it must
  // outlive this): compute() then also reserves its interval on the shared
  // timeline, after whatever the other process holds (run_detail::GpuLease).
  void share(run_detail::GpuLease* lease) { lease_ = lease; }
  // Nanoseconds compute() started later than asked because the other process
  // held the GPU (0 without a lease).
  std::int64_t delayed_ns() const { return delayed_ns_; }
  // A wake-up's latency, high: the largest of compute()'s last timer
  // wake-ups, at least the lead its timer is set early by.
  std::uint64_t wake_latency_bound_ns() const { return std::max(wake_latencies_.max(), wake_lead_.lead_ns()); }

  const std::vector<Interval>& busy() const { return busy_; }
  // Busy nanoseconds inside [from_ns, to_ns).
  std::int64_t busy_ns(std::int64_t from_ns, std::int64_t to_ns) const;
  // The gaps between busy intervals inside [from_ns, to_ns), in time order.
  std::vector<Interval> idle(std::int64_t from_ns, std::int64_t to_ns) const;
  // Drops intervals that ended before `ns` (a long run's memory stays bounded).
  void forget_before(std::int64_t ns);

 private:
  std::vector<Interval> busy_;  // sorted by start, non-overlapping
  run_detail::GpuLease* lease_ = nullptr;
  std::int64_t delayed_ns_ = 0;
  base::WakeLead wake_lead_;
  RecentMax wake_latencies_;
};

// How long a compute keeps a shared GPU past its end for its process's next
// compute (EmulatedGpu::compute's hold_ns), learned from the process itself.
// A real framework queues its next kernel behind the running one; the
// emulated worker must wake and reserve, and a prefill step that takes the
// gap meanwhile holds training back by up to a step. The hold covers a
// wake-up (`wake_ns`: EmulatedGpu::wake_latency_bound_ns) and the reaction
// after it: from the end of a compute it held the GPU after (or from the
// arrival of the message its next compute waited for, if later, as the
// process read it, once awake) to that next compute's reservation.
class ComputeHold {
 public:
  void learn(std::uint64_t reaction_ns) { reactions_.learn(reaction_ns); }
  std::uint64_t hold_ns(std::uint64_t wake_ns) const { return wake_ns + reactions_.max(); }

 private:
  RecentMax reactions_;
};

}  // namespace wanlab::harness
