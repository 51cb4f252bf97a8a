// The one clock that times are compared on: CLOCK_MONOTONIC in nanoseconds,
// the same in every process of one machine (the testbed's [[event]] origin,
// the releaser's departures, the harness's GPU timelines and records).
#pragma once

#include <chrono>
#include <cstdint>

namespace wanlab::base {

/// CLOCK_MONOTONIC now, in nanoseconds.
std::int64_t monotonic_ns();

/// A steady_clock time (Asio's, the transport's) on the same scale: on Linux,
/// libstdc++'s and libc++'s steady_clock read CLOCK_MONOTONIC.
inline std::int64_t monotonic_ns(std::chrono::steady_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
}

}  // namespace wanlab::base
