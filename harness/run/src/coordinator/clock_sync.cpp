#include "coordinator/clock_sync.hpp"

#include <fmt/format.h>

namespace wanlab::harness::run_detail {
namespace ctl = control;

std::optional<ctl::ClockProbe> ClockSync::reply(const ctl::ClockReply& reply, std::int64_t now_ns) {
  if (known_ || reply.sequence != replies_)
    throw ctl::ControlError(fmt::format("unexpected clock_reply {}", reply.sequence));
  const std::int64_t rtt = now_ns - reply.coordinator_ns;
  if (rtt < 0 || reply.coordinator_ns <= 0) throw ctl::ControlError("clock_reply echoes a time not sent");
  if (reply.worker_ns < 0) throw ctl::ControlError("clock_reply: a negative CLOCK_MONOTONIC");
  if (rtt < rtt_ns_) {
    rtt_ns_ = rtt;
    offset_ns_ = reply.worker_ns - (reply.coordinator_ns + rtt / 2);
  }
  if (++replies_ < kProbes) return ctl::ClockProbe{replies_, now_ns};
  known_ = true;
  return std::nullopt;
}

std::int64_t ClockSync::to_coordinator(std::int64_t process_ns) const {
  std::int64_t out = 0;
  if (__builtin_sub_overflow(process_ns, offset_ns_, &out))
    throw ctl::ControlError(fmt::format("a time ({} ns) beyond the clock's range", process_ns));
  return out;
}

std::int64_t ClockSync::to_process(std::int64_t coordinator_ns) const {
  std::int64_t out = 0;
  if (__builtin_add_overflow(coordinator_ns, offset_ns_, &out))
    throw ctl::ControlError(fmt::format("a time ({} ns) beyond the clock's range", coordinator_ns));
  return out;
}

}  // namespace wanlab::harness::run_detail
