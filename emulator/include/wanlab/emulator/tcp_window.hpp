// How much one TCP stream keeps in flight with a scenario's socket buffers:
// the one rule the simulator, `wanlab demo`, `wanlab verify` and the
// benchmarks use (docs/HARNESS.md, "The transfer model").
#pragma once

#include <cstdint>

#include "wanlab/emulator/scenario.hpp"

namespace wanlab::emulator {

// What a fresh network namespace has when the scenario sets no [host] buffer:
// net.ipv4.tcp_wmem[2] and tcp_rmem[2] of Linux 6.x.
inline constexpr std::uint64_t kDefaultTcpWmemMax = 4u << 20;
inline constexpr std::uint64_t kDefaultTcpRmemMax = 6u << 20;

// The share of a buffer that becomes window, measured on kernel 6.18 with
// one window-limited bulk cubic stream (TCP_INFO's unacked x mss, median):
// - send: the send buffer counts each skb's truesize (payload plus struct
//   and header room) and the sender waits for a third of it to be free, so
//   about this much of wmem is payload in flight. Measured: 0.64 (4 MiB,
//   1 Gbit/s, 50 ms), 0.67 (4 MiB, 100 Mbit/s, 150 ms), 0.65 (16 MiB), 0.65
//   (3 MiB, 1 Gbit/s) - but more of a small buffer: 0.74-0.76 of 2 MiB at
//   100 Mbit/s (0.66 at 1 Gbit/s), 0.74 of 1 MiB, 0.85 of 0.4 MiB. 0.66 is
//   the share of the kernel's default 4 MiB; 0.80, from a 2 MB iperf3 run,
//   made the transfer grid's window-limited single streams 20-30% slower than
//   modelled. (Open: a share by buffer size; experiments at scale 0.1 run
//   with 0.4 MiB buffers, whose window this puts about 20% low.)
// - receive: the advertised window is rmem x the kernel's scaling_ratio
//   (payload / truesize of what arrives; tcp_win_from_space).
inline constexpr double kSendBufferWindowShare = 0.66;
inline constexpr double kReceiveBufferWindowShare = 0.76;

// TCP payload per byte the data plane charges: 1448 of a 1514-byte frame
// (1500-byte MTU less IPv4, TCP and timestamp headers, over the frame with its
// 14-byte Ethernet header). A link's goodput is its rate x this.
inline constexpr double kPayloadShare = 1448.0 / 1514.0;

// The window ceiling of one stream in bytes: the smaller of the send and the
// receive side's, each from the scenario's buffer or the kernel's default.
double stream_window_bytes(const HostSettings& host);

// The same over a round trip: what one stream carries at most (bits/s);
// infinite when rtt_s is 0.
double stream_window_limit_bps(const HostSettings& host, double rtt_s);

}  // namespace wanlab::emulator
