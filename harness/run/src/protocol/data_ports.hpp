// The TCP ports a run's processes listen on for data, on their host's
// address: one place, because the coordinator assigns them, the docs name them
// for firewalls (SCALE-OUT.md), and they must not collide.
#pragma once

#include <cstdint>

#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness::run_detail {

// All below 32768, the start of the kernel's default ephemeral range
// (net.ipv4.ip_local_port_range 32768-60999): a port in it can be taken by
// an outgoing connection of another process on the same host before its
// worker listens. At 47000 + worker id that happened: "worker 8 ... failed:
// listening on 10.77.1.1:47008: Address already in use" (bubbletea-general.sh
// seed 10, 2026-12-01).
inline constexpr std::uint16_t kIntraDcPort = 27000;  // + worker id: channels inside a DC
inline constexpr std::uint16_t kCrossDcPort = 29000;  // + worker id: channels across DCs
inline constexpr std::uint16_t kSinkPort = 31000;     // BubbleTea's decode sink
static_assert(kIntraDcPort + kMaxEmulatedWorkers <= kCrossDcPort && kCrossDcPort + kMaxEmulatedWorkers <= kSinkPort &&
                  kSinkPort < 32768,
              "data ports overlap, or reach the ephemeral range");

}  // namespace wanlab::harness::run_detail
