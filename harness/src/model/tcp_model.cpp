#include "wanlab/harness/model/tcp_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wanlab::harness {

namespace {

constexpr double kDoneBytes = 0.5;  // rounding left over once the last byte is sent

double in_flight_limit(const TcpPath& path, const TcpChannelState& state) {
  return std::min(state.cwnd_bytes, path.window_bytes);
}

// How long `bytes` over `streams` take to go onto the link back to back
// (or paced) from `state`.
double burst_s(const TcpPath& path, const TcpChannelState& state, double streams, double bytes) {
  const double link = bytes * 8 / path.rate_bps;
  const double flow = bytes / streams * 8 / stream_rate_bps(path, state);
  return std::max(link, flow);
}

// The RTT the channel's ACKs last measured (a queue's wait included), or the
// path's before its first round.
double srtt_or_rtt_s(const TcpPath& path, const TcpChannelState& state) {
  return state.srtt_s > 0 ? state.srtt_s : path.rtt_s;
}

}  // namespace

double pacing_limit_bps(const TcpPath& path, const TcpChannelState& state) {
  if (!path.paced || !(path.rtt_s > 0)) return std::numeric_limits<double>::infinity();
  // tcp_update_pacing_rate: "approaching the end of slow start" from half of ssthresh.
  const bool early_slow_start = state.pacing_cwnd_bytes < state.ssthresh_bytes / 2;
  return (early_slow_start ? kPacingSlowStartRatio : kPacingAvoidanceRatio) * state.pacing_cwnd_bytes * 8 /
         srtt_or_rtt_s(path, state);
}

double stream_rate_bps(const TcpPath& path, const TcpChannelState& state) {
  return std::min({path.flow_rate_bps, pacing_limit_bps(path, state), path.max_pacing_bps});
}

double effective_streams(double bytes, int streams, double chunk_bytes) {
  if (streams <= 1 || !(bytes > chunk_bytes)) return 1;
  const double chunks = std::ceil(bytes / chunk_bytes);
  const double most_loaded = std::min(bytes, std::ceil(chunks / streams) * chunk_bytes);
  return std::min(static_cast<double>(streams), bytes / most_loaded);
}

double round_bytes(const TcpPath& path, const TcpChannelState& state, double streams, double left_bytes) {
  return std::min(left_bytes, streams * in_flight_limit(path, state));
}

namespace {

// The handshake's one RTT sample sets rttvar to half of 4 x RTT, at least TCP_RTO_MIN.
double handshake_rttvar_s(const TcpPath& path) { return std::max(2 * path.rtt_s, kMinRtoS); }

}  // namespace

double rto_s(const TcpPath& path, const TcpChannelState& state) {
  return srtt_or_rtt_s(path, state) + (state.rttvar_s >= 0 ? state.rttvar_s : handshake_rttvar_s(path));
}

void after_round(const TcpPath& path, TcpChannelState& state, double streams, double sent_bytes, double queue_wait_s) {
  state.srtt_s = path.rtt_s + queue_wait_s;
  // From the second round on, a round's ACKs end a window of RTT samples
  // begun in the round before: rttvar moves a quarter of the way from the
  // handshake's 2 x RTT toward TCP_RTO_MIN (the RTT being constant).
  if (state.rttvar_s < 0)
    state.rttvar_s = handshake_rttvar_s(path);
  else
    state.rttvar_s -= std::max(0.0, state.rttvar_s - kMinRtoS) / 4;
  const double per_stream = sent_bytes / streams;
  // A stream whose max pacing rate spreads its round over more than an RTT
  // has only an RTT's worth of it in flight at once (Linux's
  // max_packets_out). The link spreading a round does not count: what waits
  // in its queue is in flight.
  const double in_flight = std::min(per_stream, path.max_pacing_bps / 8 * state.srtt_s);
  // cwnd, not the window ceiling below it, stopped the round.
  const bool cwnd_limited = in_flight >= state.cwnd_bytes - kDoneBytes;
  // A round sent while a cwnd-limited round's ACKs come back is sent as they
  // free the window, so in flight stays at cwnd until its last segment: Linux
  // keeps is_cwnd_limited for that window and grows cwnd by all of it.
  const bool ack_clocked = state.last_round_full;
  const double most_in_flight = std::max(in_flight, state.last_round_bytes);
  const double slow_start_ends = std::max(state.ssthresh_bytes, state.cwnd_bytes);  // never below cwnd
  if (state.cwnd_bytes >= state.ssthresh_bytes) {
    // Congestion avoidance: cubic's curve, where cwnd limits what is sent.
    state.avoidance_s += path.rtt_s;
    if (cwnd_limited || ack_clocked) {
      const double w_max = state.w_max_bytes / kSegmentBytes;
      const double t = state.avoidance_s - state.cubic_k_s;
      const double cubic = (kCubicC * t * t * t + w_max) * kSegmentBytes;
      state.cwnd_bytes = std::clamp(cubic, state.cwnd_bytes, std::min(2 * state.cwnd_bytes, 2 * path.window_bytes));
    }
  } else if (cwnd_limited || ack_clocked) {
    state.cwnd_bytes = std::min({state.cwnd_bytes + per_stream, 2 * path.window_bytes, slow_start_ends});
  } else if (2 * most_in_flight > state.cwnd_bytes) {
    // Where the buffers or a pacing rate cap what is in flight, cwnd still
    // grows while it is under twice that (the kernel's slow-start test,
    // tcp_is_cwnd_limited), so it ends at twice what was in flight: twice the
    // window ceiling, or twice a paced stream's rate x RTT.
    state.cwnd_bytes =
        std::min({state.cwnd_bytes + per_stream, 2 * most_in_flight, 2 * path.window_bytes, slow_start_ends});
  }
  state.last_round_bytes = in_flight;
  state.last_round_full = cwnd_limited;
  state.cwnd_bytes = std::max(state.cwnd_bytes, kInitialWindowBytes);
  state.pacing_cwnd_bytes = state.cwnd_bytes;
}

void after_loss(TcpChannelState& state, double share_of_streams) {
  const double beta = 1 - (1 - kCubicBeta) * share_of_streams;
  state.w_max_bytes = state.cwnd_bytes;
  state.cubic_k_s = std::cbrt(state.w_max_bytes / kSegmentBytes * (1 - kCubicBeta) / kCubicC);
  state.cwnd_bytes = std::max(kInitialWindowBytes / 5, beta * state.cwnd_bytes);  // at least 2 segments
  state.ssthresh_bytes = state.cwnd_bytes;
  state.pacing_cwnd_bytes = state.cwnd_bytes;
  state.avoidance_s = 0;
}

void on_peer_segment(TcpChannelState& state) { state.pacing_cwnd_bytes = state.cwnd_bytes; }

void after_idle(const TcpPath& path, TcpChannelState& state, double idle_s) {
  const double rto = rto_s(path, state);
  if (idle_s > path.rtt_s) {  // a window with nothing in flight has passed
    state.last_round_bytes = 0;
    state.last_round_full = false;
  }
  if (!path.slow_start_after_idle) return;
  // tcp_cwnd_restart: ssthresh at least 3/4 of cwnd (tcp_current_ssthresh), then cwnd halves.
  if (idle_s > rto) state.ssthresh_bytes = std::max(state.ssthresh_bytes, 0.75 * state.cwnd_bytes);
  const double restart = std::min(kInitialWindowBytes, state.cwnd_bytes);
  for (double left = idle_s - rto; left > 0 && state.cwnd_bytes > restart; left -= rto) state.cwnd_bytes /= 2;
  state.cwnd_bytes = std::max(state.cwnd_bytes, restart);
}

double transfer_alone_s(const TcpPath& path, double streams, double bytes, TcpChannelState& state) {
  double left = bytes;
  double elapsed = 0;
  while (true) {
    const double sent = round_bytes(path, state, streams, left);
    const double on_link = burst_s(path, state, streams, sent);
    left -= sent;
    after_round(path, state, streams, sent);
    if (left < kDoneBytes) return elapsed + on_link + path.delay_s;
    elapsed += std::max(path.rtt_s, on_link);
  }
}

double steady_transfer_s(const TcpPath& path, int streams, double bytes) {
  const double per_stream = std::min(path.flow_rate_bps, path.window_bytes * 8 / path.rtt_s);
  return bytes * 8 / std::min(path.rate_bps, streams * per_stream) + path.delay_s;
}

}  // namespace wanlab::harness
