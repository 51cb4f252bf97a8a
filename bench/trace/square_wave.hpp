// The schedule benchmark's square wave (bench/trace_bench.cpp) and the hosts
// it runs between: what the wanlab testbed and Mahimahi's replay share.
#pragma once

#include <cstdint>

namespace wanlab::bench::trace {

inline constexpr std::uint64_t kMs = 1'000'000;
inline constexpr std::uint64_t kHalfNs = 500 * kMs;  // each half of the wave
inline constexpr std::uint64_t kOneWayNs = 10 * kMs;
inline constexpr double kLowShare = 0.4;  // the low half's rate, of the high half's
// The hosts' socket buffer limits, in the scenario and in Mahimahi's shells.
inline constexpr const char* kTcpWmemMax = "64mb";
inline constexpr const char* kTcpRmemMax = "128mb";

}  // namespace wanlab::bench::trace
