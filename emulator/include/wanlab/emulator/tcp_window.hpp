// How much one TCP stream keeps in flight with a scenario's socket buffers:
// the one rule the simulator, `wanlab demo`, `wanlab verify` and the
// benchmarks use (docs/SIMULATOR.md, "The transfer model").
#pragma once

#include <cstdint>
#include <limits>

#include "wanlab/emulator/scenario.hpp"

namespace wanlab::emulator {

// What a fresh network namespace has when the scenario sets no [host] buffer:
// net.ipv4.tcp_wmem[2] and tcp_rmem[2] of Linux 6.x.
inline constexpr std::uint64_t kDefaultTcpWmemMax = 4u << 20;
inline constexpr std::uint64_t kDefaultTcpRmemMax = 6u << 20;

// The share of a buffer that becomes window, measured on kernel 6.18 with
// one window-limited bulk cubic stream. The send buffer counts each skb's
// truesize (payload plus struct and header room), so only part of wmem is
// payload in flight; how much depends on the writer:
// - A writer that refills its socket when the kernel reports room
//   (send_buffer_window_share): Linux reports a socket writable (POLLOUT) only
//   once a third of the buffer is free, so such a writer holds the queue near
//   two thirds of the buffer. Measured (TCP_INFO's unacked x mss, median, or
//   goodput x RTT of a paced 16 MiB or 2 MiB message, with the harness's
//   transport as it wrote until 2026-12-05, which refilled so): 0.68 of 41 KB
//   (scale 0.01; 10 Mbit/s, 33 ms), 0.85-0.87 of 0.4 MiB (scale 0.1; 100
//   Mbit/s, 33 and 50 ms), 0.74 of 1 MiB, 0.66-0.76 of 2 MiB (1 Gbit/s, 100
//   Mbit/s), 0.64-0.67 of 4 MiB (the kernel's default), 0.65 of 16 MiB. A
//   blocking bulk writer, which sleeps until a third is free and then fills
//   the buffer, keeps a little more: `wanlab demo` on three-dc.toml (4 MiB,
//   66-136 ms, 2026-11-27) got 0.71-0.72 of 4 MiB (goodput x RTT), 107-108%
//   of this rule, and gloo's one stream per pair of ranks (4 MiB, 20 ms,
//   bench/results/pytorch/) 0.75-0.77, 114-117%: kUnpacedSendShareGain, their
//   middle. `wanlab demo`, `wanlab verify` and the gloo model use these.
// - The harness's transport (chunk_writer_send_share): its writer takes a
//   chunk whenever the buffer has room for it, looking again after one
//   chunk's time at the pacing rate rather than waiting for POLLOUT, so the
//   queue stays near full and the share is the skbs' payload share
//   (skb_payload_share), measured 0.75-0.98 of 0.4-4 MiB
//   (docs/SIMULATOR.md, "Send buffer").
// - receive: the advertised window is rmem x the kernel's scaling_ratio
//   (payload / truesize of what arrives; tcp_win_from_space).
inline constexpr double kReceiveBufferWindowShare = 0.76;
inline constexpr double kUnpacedSendShareGain = 1.1;

// The POLLOUT writer's send share above for a send buffer of `wmem_bytes`:
// linear in log2(size) between the measured sizes, the nearest one's outside
// them.
double send_buffer_window_share(double wmem_bytes);

// What a skb costs the send buffer beyond its payload (truesize - payload):
// its struct sk_buff, the header room and skb_shared_info. Measured on 6.18
// as the payload / wmem_queued of a stream whose queue held skbs of 2, 6 and
// 8 segments: 880 bytes each (0.767, 0.908, 0.929).
inline constexpr double kSkbOverheadBytes = 880;
// The most segments in one skb: GSO's 64 KiB over 1448-byte segments.
inline constexpr int kMaxSkbSegments = 45;

// How many segments TCP puts in one skb at a pacing rate of
// `pacing_bytes_per_s` (tcp_tso_autosize: about 1 ms of the pacing rate, the
// rate >> 10 bytes, at least 2 segments, at most kMaxSkbSegments).
int skb_segments(double pacing_bytes_per_s);

// The payload share of the send buffer's memory in skbs of `segments`.
double skb_payload_share(int segments);

// One stream of the harness's transport whose send buffer binds.
struct ChunkWriter {
  double send_buffer_bytes = 0;
  double chunk_bytes = 0;  // one chunk with its header
  double room_bytes = 0;   // the free buffer the writer waits for before it takes a chunk
  double max_pacing_bytes_per_s = std::numeric_limits<double>::infinity();  // SO_MAX_PACING_RATE; infinite: none
  double link_bytes_per_s = std::numeric_limits<double>::infinity();        // payload the link carries
  double rtt_s = 0;
};

// The share of its send buffer that such a stream keeps in flight, measured
// on the round trip the scenario configures:
// - its writer takes a chunk once `room_bytes` are free
//   (transport/src/channel_send.cpp, takes_chunks) and looks again one
//   chunk's time at the pacing rate later, so on average the room less half
//   a chunk, plus half of what the ACKs free between two looks, stays free,
//   and half of the latter waits unsent; a chunk larger than the room fills
//   the buffer to the brim instead;
// - the rest is skbs whose size follows the pacing rate: a stream that has
//   lost nothing left slow start with cwnd at twice what it has in flight
//   (cwnd grows while it is under twice the packets out), and Linux paces at
//   2 x cwnd / srtt below ssthresh / 2, so at four times the stream's rate,
//   at most the max pacing rate;
// - an skb crosses the link as one burst, so its last byte comes back that
//   burst's time later than the RTT.
// Measured against 21 buffer-bound cells of 0.4-4 MiB, 30 Mbit/s-1 Gbit/s,
// 20-160 ms (docs/SIMULATOR.md, "Send buffer"). 0 for a buffer that is not > 0.
double chunk_writer_send_share(const ChunkWriter& writer);

// A full-size TCP segment on the emulated links: a 1500-byte MTU less 20
// bytes of IPv4, 20 of TCP and 12 of the timestamp option Linux sends leaves
// 1448 bytes of payload, in a frame of 1514 with the 14-byte Ethernet header,
// which is what the data plane charges a link for.
inline constexpr double kSegmentPayloadBytes = 1448;
inline constexpr double kFrameBytes = 1514;
// TCP payload per byte the data plane charges. A link's goodput is its rate x this.
inline constexpr double kPayloadShare = kSegmentPayloadBytes / kFrameBytes;

// The receive side's window ceiling of one stream in bytes, from the
// scenario's buffer or the kernel's default.
double receive_window_bytes(const HostSettings& host);

// The window ceiling of one stream in bytes with a writer that refills at
// POLLOUT (send_buffer_window_share): the smaller of the send and the receive
// side's, each from the scenario's buffer or the kernel's default;
// `blocking_writer`: the send side keeps kUnpacedSendShareGain more (gloo,
// iperf3, `wanlab demo`'s bulk stream). The harness's transport keeps more
// still (chunk_writer_send_share), which the simulator's link model uses.
double stream_window_bytes(const HostSettings& host, bool blocking_writer = false);

// The same over a round trip: what one stream carries at most (bits/s);
// infinite when rtt_s is 0.
double stream_window_limit_bps(const HostSettings& host, double rtt_s);

}  // namespace wanlab::emulator
