#include "wanlab/emulator/tcp_window.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace wanlab::emulator {

double send_buffer_window_share(double wmem_bytes) {
  // (send buffer, share), measured (tcp_window.hpp); 2 MiB: the middle of 0.66-0.76.
  static constexpr std::array<std::pair<double, double>, 6> kMeasured{
      {{41943, 0.68}, {419430, 0.86}, {1 << 20, 0.74}, {2 << 20, 0.70}, {4 << 20, 0.66}, {16 << 20, 0.65}}};
  if (!(wmem_bytes > kMeasured.front().first)) return kMeasured.front().second;
  for (std::size_t i = 1; i < kMeasured.size(); ++i) {
    const auto [size, share] = kMeasured[i];
    if (wmem_bytes > size) continue;
    const auto [below, below_share] = kMeasured[i - 1];
    const double at = std::log2(wmem_bytes / below) / std::log2(size / below);
    return below_share + at * (share - below_share);
  }
  return kMeasured.back().second;
}

int skb_segments(double pacing_bytes_per_s) {
  const double segments = std::floor(pacing_bytes_per_s / 1024 / kSegmentPayloadBytes);
  if (!(segments >= 2)) return 2;
  return segments >= kMaxSkbSegments ? kMaxSkbSegments : static_cast<int>(segments);
}

double skb_payload_share(int segments) {
  const double payload = segments * kSegmentPayloadBytes;
  return payload / (payload + kSkbOverheadBytes);
}

double chunk_writer_send_share(const ChunkWriter& writer) {
  const double wmem = writer.send_buffer_bytes, chunk = writer.chunk_bytes;
  if (!(wmem > 0)) return 0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // The skbs' size and the writer's looks depend on the stream's rate, which
  // depends on them: a few rounds settle it (each moves it by a few percent).
  double share = skb_payload_share(kMaxSkbSegments);
  for (int round = 0; round < 8; ++round) {
    const double rate = writer.rtt_s > 0 ? share * wmem / writer.rtt_s : kInf;
    const double pacing = std::min(writer.max_pacing_bytes_per_s, 4 * rate);
    // What the ACKs free between two looks of the writer.
    const double freed = chunk * (std::isfinite(pacing) ? std::min(1.0, rate / pacing) : 1.0);
    // A chunk the room holds goes in whole; a larger one fills the buffer to
    // the brim, the rest going in as the ACKs free room.
    const double free = writer.room_bytes >= chunk ? writer.room_bytes - chunk / 2 + freed / 2 : freed / 2;
    const int segments = skb_segments(pacing);
    const double in_flight = (wmem - std::min(free, wmem)) * skb_payload_share(segments) - freed / 2;
    // Each skb crosses the link as one burst: the last of its segments is
    // acknowledged that much after the first (the measured RTT is 1 ms above
    // the configured one at 100 Mbit/s, 3.4 ms at 10 Mbit/s with 2-segment skbs).
    const double burst_s = segments * kSegmentPayloadBytes / writer.link_bytes_per_s;
    const double stretch = writer.rtt_s > 0 ? writer.rtt_s / (writer.rtt_s + burst_s) : 1.0;
    share = std::max(0.0, in_flight / wmem) * stretch;
  }
  return share;
}

double receive_window_bytes(const HostSettings& host) {
  return static_cast<double>(host.tcp_rmem_max.value_or(kDefaultTcpRmemMax)) * kReceiveBufferWindowShare;
}

double stream_window_bytes(const HostSettings& host, bool blocking_writer) {
  const auto wmem = static_cast<double>(host.tcp_wmem_max.value_or(kDefaultTcpWmemMax));
  const double send = wmem * send_buffer_window_share(wmem) * (blocking_writer ? kUnpacedSendShareGain : 1.0);
  return std::min(send, receive_window_bytes(host));
}

double stream_window_limit_bps(const HostSettings& host, double rtt_s) {
  if (!(rtt_s > 0)) return std::numeric_limits<double>::infinity();
  return stream_window_bytes(host) * 8 / rtt_s;
}

}  // namespace wanlab::emulator
