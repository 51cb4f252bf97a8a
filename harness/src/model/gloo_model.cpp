#include "wanlab/harness/model/gloo_model.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/harness/model/link_model.hpp"

namespace wanlab::harness {

GlooRingSegments gloo_ring_segments(int ranks, double bytes) {
  GlooRingSegments segments;
  segments.segment_bytes = std::min(std::ceil(bytes / (2.0 * ranks)), kGlooMaxSegmentBytes);
  const double needed = segments.segment_bytes > 0 ? std::ceil(bytes / segments.segment_bytes) : 0;
  segments.count = std::ceil(std::max(needed, 2.0 * ranks) / ranks) * ranks;
  return segments;
}

TcpPath gloo_path(const emulator::Scenario& scenario, int src, int dst) {
  const emulator::PairParams there = scenario.pair(src, dst);
  const emulator::PairParams back = scenario.pair(dst, src);
  const double rtt_s = static_cast<double>(there.delay_ns + back.delay_ns) / 1e9;
  TcpPath path = tcp_path_for(there, rtt_s, link_model_for(scenario, 1.0), 1.0, 0);
  path.window_bytes = emulator::stream_window_bytes(scenario.host, /*blocking_writer=*/true);
  return path;
}

double gloo_send_s(const TcpPath& path, double notice_s, double bytes, TcpChannelState& state) {
  return notice_s + transfer_alone_s(path, 1, bytes, state);
}

double gloo_allreduce_s(std::span<const TcpPath> ring, double bytes) {
  const int ranks = static_cast<int>(ring.size());
  if (ranks < 2) return 0;
  const GlooRingSegments segments = gloo_ring_segments(ranks, bytes);
  double slowest_segment_s = 0, delay_s = 0;
  for (const TcpPath& link : ring) {
    const double stream_bps = std::min({link.rate_bps, link.flow_rate_bps, link.window_bytes * 8 / link.rtt_s});
    slowest_segment_s = std::max({slowest_segment_s, link.delay_s, segments.segment_bytes * 8 / stream_bps});
    delay_s = std::max(delay_s, link.delay_s);
  }
  return 2.0 * (ranks - 1) * (segments.count / ranks) * slowest_segment_s + delay_s;
}

double gloo_allreduce_s(const emulator::Scenario& scenario, double bytes) {
  const int ranks = static_cast<int>(scenario.dcs.size());
  std::vector<TcpPath> ring;
  for (int i = 0; i < ranks; ++i) ring.push_back(gloo_path(scenario, i, (i + 1) % ranks));
  return gloo_allreduce_s(ring, bytes);
}

}  // namespace wanlab::harness
