// How much one TCP stream keeps in flight with a scenario's socket buffers:
// the one rule the simulator, `wanlab demo`, `wanlab verify` and the
// benchmarks use (docs/SIMULATOR.md, "The transfer model").
#pragma once

#include <cstdint>

#include "wanlab/emulator/scenario.hpp"

namespace wanlab::emulator {

// What a fresh network namespace has when the scenario sets no [host] buffer:
// net.ipv4.tcp_wmem[2] and tcp_rmem[2] of Linux 6.x.
inline constexpr std::uint64_t kDefaultTcpWmemMax = 4u << 20;
inline constexpr std::uint64_t kDefaultTcpRmemMax = 6u << 20;

// The share of a buffer that becomes window, measured on kernel 6.18 with
// one window-limited bulk cubic stream:
// - send (send_buffer_window_share): the send buffer counts each skb's
//   truesize (payload plus struct and header room) and the sender waits for
//   a third of it to be free, so only part of wmem is payload in flight, and
//   how much depends on the size. Measured (TCP_INFO's unacked x mss, median,
//   or goodput x RTT of a paced 16 MiB or 2 MiB message): 0.68 of 41 KB
//   (wanlab train's hosts at scale 0.01; 10 Mbit/s, 33 ms), 0.85-0.87 of
//   0.4 MiB (scale 0.1; 100 Mbit/s, 33 and 50 ms), 0.74 of 1 MiB, 0.66-0.76
//   of 2 MiB (1 Gbit/s, 100 Mbit/s), 0.64-0.67 of 4 MiB (the kernel's
//   default), 0.65 of 16 MiB. One share of 0.66 for every size made the
//   simulated one-stream runs at scale 0.1 10-20% slower than measured.
//   An unpaced bulk stream keeps a little more: `wanlab demo` on three-dc.toml
//   (4 MiB, 66-136 ms, 2026-11-27) got 0.71-0.72 of 4 MiB (goodput x RTT),
//   107-108% of this rule, and gloo's one stream per pair of ranks (4 MiB,
//   20 ms, bench/results/pytorch/) 0.75-0.77, 114-117%: kUnpacedSendShareGain,
//   their middle. The harness paces its streams, so its rule is the paced one.
// - receive: the advertised window is rmem x the kernel's scaling_ratio
//   (payload / truesize of what arrives; tcp_win_from_space).
inline constexpr double kReceiveBufferWindowShare = 0.76;
inline constexpr double kUnpacedSendShareGain = 1.1;

// The measured send share above for a send buffer of `wmem_bytes`: linear in
// log2(size) between the measured sizes, the nearest one's outside them.
double send_buffer_window_share(double wmem_bytes);

// A full-size TCP segment on the emulated links: a 1500-byte MTU less 20
// bytes of IPv4, 20 of TCP and 12 of the timestamp option Linux sends leaves
// 1448 bytes of payload, in a frame of 1514 with the 14-byte Ethernet header,
// which is what the data plane charges a link for.
inline constexpr double kSegmentPayloadBytes = 1448;
inline constexpr double kFrameBytes = 1514;
// TCP payload per byte the data plane charges. A link's goodput is its rate x this.
inline constexpr double kPayloadShare = kSegmentPayloadBytes / kFrameBytes;

// The window ceiling of one stream in bytes: the smaller of the send and the
// receive side's, each from the scenario's buffer or the kernel's default;
// `paced`: the stream has a max pacing rate (the harness's), else the send
// side keeps kUnpacedSendShareGain more (gloo, iperf3).
double stream_window_bytes(const HostSettings& host, bool paced = true);

// The same over a round trip: what one stream carries at most (bits/s);
// infinite when rtt_s is 0.
double stream_window_limit_bps(const HostSettings& host, double rtt_s);

}  // namespace wanlab::emulator
