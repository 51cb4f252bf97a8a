// How the simulator models TCP on an emulated path: how long a message takes
// on N streams, and what the streams' congestion windows carry from one
// message to the next. Linux cubic as it runs on these links, in rounds of
// one round trip (docs/SIMULATOR.md, "The transfer model", has the measurements
// behind each rule):
// - A stream starts with the initial window (10 segments of 1448 bytes).
// - In a round, the streams send what their windows allow (at most the
//   window ceiling, emulator/tcp_window.hpp) of what is left of the message,
//   back to back onto the link; the round lasts one RTT, or longer while that
//   burst is still on the link (then the link, not the window, binds).
// - Slow start: each round, a stream's cwnd grows by what it sent, when the
//   window limited what it sent (Linux: tcp_is_cwnd_limited): cwnd stopped
//   the round, or the round followed one that cwnd stopped (sent as that
//   round's ACKs freed the window, so in flight stayed at cwnd), or cwnd is
//   below twice the most in flight over this round or the one before. The
//   last test lets cwnd grow to twice what bounds in flight while cwnd does
//   not: the window ceiling, or a max pacing rate x RTT (a paced stream has
//   only an RTT of its round in flight). (Measured: after a cold 1 MB
//   message cwnd is 10 segments plus every segment sent; at the ceiling of
//   4 MB/6 MB buffers, 2200 segments, cwnd reads 4000-5000; streams paced at
//   100 Mbit/s / 8 over 66 ms, 71 segments in flight, read 140-220, where
//   the model without the pacing bound let cwnd grow to thousands and an
//   idle restart kept too much of it.)
// - Paced (SO_MAX_PACING_RATE, as wanlab train sets it), TCP spreads a round
//   over time itself: a stream sends at most 2 x cwnd / srtt while cwnd is
//   under half of ssthresh (Linux's tcp_pacing_ss_ratio), 1.2 x cwnd / srtt
//   from there (tcp_pacing_ca_ratio), where srtt is the RTT its ACKs last
//   measured, a queue's wait included. The kernel sets that rate on each
//   segment that comes in (tcp_update_pacing_rate), so after an idle restart
//   it still holds the cwnd from before the idle time until the first one:
//   a round's ACKs, or sooner the peer's own data on the same connections
//   (on_peer_segment). Then the restarted window leaves at 1.2 x its cwnd /
//   an srtt that still holds the queue before the idle time: measured with
//   `ss` on atlas-3dc with temporal sharing off, of 264 restarts that halved
//   cwnd, 217 paced at exactly that before any of the new round was
//   acknowledged (cwnd 26, srtt 124 ms: 2.9 Mbit/s, where the rate from
//   before was 5.9), 42 still at the old rate; all 64 restarts to the initial
//   window (an iteration's first message, nothing coming in) at the old rate.
// - The message's last byte arrives one way's delay after it left.
// - Idle: with tcp_slow_start_after_idle (Linux's default), a stream idle for
//   longer than its RTO halves its cwnd once per RTO it was idle, never below
//   the initial window (tcp_cwnd_restart). RTO = srtt + rttvar: the handshake
//   sets rttvar to max(2 x RTT, 200 ms) (RTO = 3 x RTT), and each round
//   after the first moves it a quarter of the way down to 200 ms
//   (tcp_rtt_estimator with a constant RTT). Measured at 150 ms one way
//   (tcpi_rto): 904 ms after the handshake; 588 ms after 7 rounds (model
//   571); 756 ms after 3 rounds with a 320 ms handshake (model 747).
// - Loss (the simulator's drop-tail queues, simulate_wire.cpp): a loss cuts
//   cwnd to cubic's 0.7 on the streams it hits (after_loss) and ends slow
//   start there (ssthresh); from then cwnd follows cubic's curve back to the
//   window before the loss over the time the channel sends, where cwnd
//   limits what it sends, and a paced stream's pacing rate is 1.2 x cwnd / srtt
//   (tcp_pacing_ca_ratio). An idle restart keeps ssthresh at least 3/4 of the
//   cwnd before it (tcp_current_ssthresh).
// The cwnd persists between the messages of one channel (one connection set).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "wanlab/emulator/tcp_window.hpp"

namespace wanlab::harness {

inline constexpr double kSegmentBytes = emulator::kSegmentPayloadBytes;
// What a TCP stream's ACKs take of the link back, per bit of its payload:
// Linux ACKs every second full-sized segment (RFC 5681's delayed ACK), a
// 66-byte frame (Ethernet, IPv4, TCP with timestamps) per two 1514-byte
// frames, each frame charged as the data plane charges it. An upper bound:
// GRO's stretch ACKs send fewer (docs/SIMULATOR.md, "ACKs", has the counts).
inline constexpr double kAckFrameBytes = 66;
inline constexpr double kAckShareOfData = kAckFrameBytes / (2 * emulator::kFrameBytes);
inline constexpr double kInitialWindowBytes = 10 * kSegmentBytes;
inline constexpr double kMinRtoS = 0.2;               // Linux's TCP_RTO_MIN
inline constexpr double kPacingSlowStartRatio = 2.0;  // net.ipv4.tcp_pacing_ss_ratio = 200 (%)
inline constexpr double kPacingAvoidanceRatio = 1.2;  // net.ipv4.tcp_pacing_ca_ratio = 120 (%)
inline constexpr double kCubicBeta = 0.7;             // cubic's window after a loss (beta = 717/1024)
inline constexpr double kCubicC = 0.4;                // cubic's growth constant, segments / s^3
// The chunk the harness's cross-DC channels stripe a message in: the
// transport hands each chunk to whichever stream takes it first.
inline constexpr std::uint32_t kCrossDcChunkBytes = 16u << 10;
// The transport's header on each chunk (transport/wire.hpp's kChunkHeaderSize).
inline constexpr std::uint32_t kChunkHeaderBytes = 40;
// The free send buffer a cross-DC stream's writer waits for before it takes
// a chunk: transport::send_room_for_chunk for kCrossDcChunkBytes and a send
// buffer of `send_buffer_bytes` (the coordinator checks that they agree).
constexpr double chunk_room_bytes(double send_buffer_bytes) {
  constexpr std::uint64_t chunk = kCrossDcChunkBytes + kChunkHeaderBytes;
  return static_cast<double>(std::min(chunk + chunk / 16, static_cast<std::uint64_t>(send_buffer_bytes) / 3));
}

struct TcpPath {
  double rate_bps = std::numeric_limits<double>::infinity();       // what the link gives this transfer
  double flow_rate_bps = std::numeric_limits<double>::infinity();  // per stream (the pair's flow_rate)
  double delay_s = 0;                                              // one way, in the data's direction
  double rtt_s = 0;
  double window_bytes = std::numeric_limits<double>::infinity();  // per stream ceiling
  bool slow_start_after_idle = true;
  bool paced = false;  // TCP's own pacing is on (the connection has a max pacing rate)
  // Per stream: the max pacing rate the harness sets (SO_MAX_PACING_RATE,
  // the pair's rate / streams), in payload bits/s; infinite where none.
  double max_pacing_bps = std::numeric_limits<double>::infinity();
};

// The congestion window of each of a channel's streams (they move alike).
struct TcpChannelState {
  double cwnd_bytes = kInitialWindowBytes;
  double last_round_bytes = 0;                     // per stream: the most the round before had in flight
  bool last_round_full = false;                    // the round before sent a whole window
  double pacing_cwnd_bytes = kInitialWindowBytes;  // the cwnd the pacing rate was last set from (on ACKs)
  // What its ACKs last measured as the round trip, a queue's wait included
  // (the kernel's srtt); < 0: no round yet, the path's RTT.
  double srtt_s = -1;
  double rttvar_s = -1;                            // the RTO's variance term; < 0: only the handshake's sample so far
  // After a loss: slow start ends at ssthresh, and cwnd follows cubic's
  // curve from the window before the loss (w_max), over the time the
  // channel has sent since (cubic does not count idle time).
  double ssthresh_bytes = std::numeric_limits<double>::infinity();
  double w_max_bytes = 0;
  double cubic_k_s = 0;  // when the curve is back at w_max: cbrt(w_max x (1 - beta) / C), in segments
  double avoidance_s = 0;
};

// How many streams a message keeps busy to its end: its chunks go to the
// streams as they take them, so the most loaded stream carries
// ceil(chunks / streams) of them and the message moves like bytes / that
// many streams (at most `streams`). Measured: 168 KB on 8 streams paced at
// 10 Mbit/s / 8 took 0.229 s warm, as 5.25 streams (0.237 s), not 8 (0.177 s).
double effective_streams(double bytes, int streams, double chunk_bytes = kCrossDcChunkBytes);

// In what follows `streams` is a message's effective_streams.
// What the streams may send in the next round: streams x min(cwnd, ceiling),
// at most `left_bytes`.
double round_bytes(const TcpPath& path, const TcpChannelState& state, double streams, double left_bytes);
// What one stream sends at most in the next round (bits/s): the least of
// the flow cap, TCP's own pacing and the harness's max pacing rate.
double stream_rate_bps(const TcpPath& path, const TcpChannelState& state);
// What TCP's own pacing lets one stream send at most in the next round
// (bits/s): infinite unless path.paced.
double pacing_limit_bps(const TcpPath& path, const TcpChannelState& state);
// After a round that sent `sent_bytes` over `streams`, its last bytes
// behind `queue_wait_s` of a link's queue: slow start's growth, and srtt.
void after_round(const TcpPath& path, TcpChannelState& state, double streams, double sent_bytes,
                 double queue_wait_s = 0);
// A segment of the peer's came in on the channel's connections (its data the
// other way): the kernel sets the pacing rate again from cwnd and srtt as
// they are, so an idle restart's smaller window now sets it.
void on_peer_segment(TcpChannelState& state);
// The channel lost segments to a full queue: cwnd to kCubicBeta of itself,
// slow start over (at most once a round trip: the caller's to keep).
void after_loss(TcpChannelState& state, double share_of_streams = 1);
// The channel sent nothing for `idle_s` (from its last data sent).
void after_idle(const TcpPath& path, TcpChannelState& state, double idle_s);
// The streams' retransmission timeout now (srtt + rttvar).
double rto_s(const TcpPath& path, const TcpChannelState& state);

// One message of `bytes` on `streams` (its effective_streams where the
// harness chunks it) alone on the path, from its send to its last byte's
// arrival, by the rounds above; `state` goes from before to after it.
double transfer_alone_s(const TcpPath& path, double streams, double bytes, TcpChannelState& state);
// The same without slow start: bytes / min(rate, streams x min(flow rate,
// window / RTT)) + one way's delay. (The simulator's model before rounds.)
double steady_transfer_s(const TcpPath& path, int streams, double bytes);

}  // namespace wanlab::harness
