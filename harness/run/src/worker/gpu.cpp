#include "wanlab/harness/run/gpu.hpp"

#include "worker/gpu_lease.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <limits>
#include <stdexcept>

namespace wanlab::harness {

const EmulatedGpu::Interval& EmulatedGpu::reserve(std::int64_t start_ns, std::uint64_t duration_ns, std::string what) {
  Interval interval{start_ns, start_ns + static_cast<std::int64_t>(duration_ns), std::move(what)};
  const auto after = std::upper_bound(busy_.begin(), busy_.end(), start_ns,
                                      [](std::int64_t t, const Interval& i) { return t < i.start_ns; });
  const bool overlaps_previous = after != busy_.begin() && std::prev(after)->end_ns > interval.start_ns;
  const bool overlaps_next = after != busy_.end() && after->start_ns < interval.end_ns;
  if (overlaps_previous || overlaps_next) {
    const Interval& other = overlaps_previous ? *std::prev(after) : *after;
    throw std::logic_error(fmt::format("GPU: {} [{}, {}) overlaps {} [{}, {})", interval.what, interval.start_ns,
                                       interval.end_ns, other.what, other.start_ns, other.end_ns));
  }
  return *busy_.insert(after, std::move(interval));
}

asio::awaitable<EmulatedGpu::Interval> EmulatedGpu::compute(asio::any_io_executor executor, std::uint64_t duration_ns,
                                                            std::string what, std::uint64_t hold_ns) {
  std::int64_t start = monotonic_ns();
  if (!busy_.empty()) start = std::max(start, busy_.back().end_ns);
  std::int64_t delayed = 0;
  if (lease_) {
    const auto shared = lease_->reserve(start, duration_ns, run_detail::GpuOwner::training, hold_ns);
    delayed = shared.delayed_ns;
    delayed_ns_ += delayed;
    start = shared.start_ns;
  }
  Interval interval = reserve(start, duration_ns, std::move(what));
  interval.delayed_ns = delayed;
  // steady_clock is CLOCK_MONOTONIC on Linux: the timer aims a wake-up's
  // latency before the planned end, and the rest is spun.
  const auto lead = static_cast<std::int64_t>(std::min(wake_lead_.lead_ns(), duration_ns / kSpinShareDivisor));
  const std::int64_t aim = interval.end_ns - lead;
  asio::steady_timer timer(executor, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(aim)));
  std::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) {
    const std::int64_t woke = monotonic_ns();
    const auto latency = static_cast<std::uint64_t>(std::max<std::int64_t>(0, woke - aim));
    wake_lead_.learn(latency);
    wake_latencies_.learn(latency);
    const std::int64_t now = woke < interval.end_ns ? base::spin_until_ns(interval.end_ns) : woke;
    interval.woke_late_ns = std::max<std::int64_t>(0, now - interval.end_ns);
  }
  co_return interval;
}

std::uint64_t RecentMax::max() const {
  const auto learned = values_.begin() + static_cast<std::ptrdiff_t>(std::min(count_, kSamples));
  return learned == values_.begin() ? 0 : *std::max_element(values_.begin(), learned);
}

std::int64_t EmulatedGpu::busy_ns(std::int64_t from_ns, std::int64_t to_ns) const {
  std::int64_t total = 0;
  for (const Interval& i : busy_)
    total += std::max<std::int64_t>(0, std::min(i.end_ns, to_ns) - std::max(i.start_ns, from_ns));
  return total;
}

std::vector<EmulatedGpu::Interval> EmulatedGpu::idle(std::int64_t from_ns, std::int64_t to_ns) const {
  std::vector<Interval> gaps;
  std::int64_t cursor = from_ns;
  for (const Interval& i : busy_) {
    if (i.end_ns <= cursor) continue;
    if (i.start_ns >= to_ns) break;
    if (i.start_ns > cursor) gaps.push_back({cursor, i.start_ns, "idle"});
    cursor = std::max(cursor, i.end_ns);
  }
  if (cursor < to_ns) gaps.push_back({cursor, to_ns, "idle"});
  return gaps;
}

void EmulatedGpu::forget_before(std::int64_t ns) {
  std::erase_if(busy_, [ns](const Interval& i) { return i.end_ns < ns; });
}

}  // namespace wanlab::harness
