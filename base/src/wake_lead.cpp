#include "wanlab/base/wake_lead.hpp"

#include <algorithm>

#include "wanlab/base/clock.hpp"

namespace wanlab::base {

void WakeLead::learn(std::uint64_t latency_ns) {
  // An exponentially weighted mean: a few slow wake-ups raise the lead, a
  // calm spell lowers it again.
  latency_ewma_ns_ = (latency_ewma_ns_ * 7 + latency_ns) / 8;
  lead_ns_ = std::clamp<std::uint64_t>(2 * latency_ewma_ns_, kMinNs, kMaxNs);
}

std::int64_t spin_until_ns(std::int64_t at_ns) {
  std::int64_t now = monotonic_ns();
  while (now < at_ns) {
    cpu_relax();
    now = monotonic_ns();
  }
  return now;
}

}  // namespace wanlab::base
