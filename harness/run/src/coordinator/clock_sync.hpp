// The clock of a process on another machine, as the coordinator learns it:
// its CLOCK_MONOTONIC minus the coordinator's, from a few clock probes over
// its control connection. Each probe carries the coordinator's time; the
// reply adds the process's. Of kProbes round trips the shortest gives the
// offset, assuming the two ways took as long: the error is at most half that
// trip. On one machine there is one clock and nothing to probe.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "wanlab/harness/run/control.hpp"

namespace wanlab::harness::run_detail {

class ClockSync {
 public:
  static constexpr int kProbes = 8;

  // One machine, one clock: known at once, offset 0.
  void same_clock() { known_ = true; }
  // The first probe to send (coordinator time `now_ns`).
  control::ClockProbe first_probe(std::int64_t now_ns) const { return control::ClockProbe{0, now_ns}; }
  // The reply to the last probe, arriving at `now_ns`: the next probe to send,
  // or nothing once the offset is known. Throws control::ControlError for a
  // reply out of turn or one that echoes a time not sent.
  std::optional<control::ClockProbe> reply(const control::ClockReply& reply, std::int64_t now_ns);

  bool known() const { return known_; }
  std::int64_t offset_ns() const { return offset_ns_; }
  // Half the shortest round trip: the bound on the offset's error (0 on one machine).
  std::int64_t bound_ns() const { return probed() ? rtt_ns_ / 2 : 0; }

  // A time on the process's clock on the coordinator's, and back. Throws
  // control::ControlError for a time that would leave the clock's range (a
  // malformed message).
  std::int64_t to_coordinator(std::int64_t process_ns) const;
  std::int64_t to_process(std::int64_t coordinator_ns) const;

 private:
  bool probed() const { return rtt_ns_ != std::numeric_limits<std::int64_t>::max(); }

  std::int64_t offset_ns_ = 0;
  std::int64_t rtt_ns_ = std::numeric_limits<std::int64_t>::max();
  int replies_ = 0;
  bool known_ = false;
};

}  // namespace wanlab::harness::run_detail
