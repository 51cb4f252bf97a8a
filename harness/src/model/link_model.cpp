// The link model (link_model.hpp): a DC pair's rate, ceiling and TCP path as
// the emulated testbed shapes it (link_rate.hpp), the model a testbed implies,
// and the pacing of rings that share a link.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/link_rate.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/emulator/tcp_window.hpp"

namespace wanlab::harness {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

namespace detail {

namespace {

// `pair` with round trip `rtt_s` as the model sees it; the harness paces its
// cross-DC streams (the coordinator's pacing_rate) at `paced_pair`'s rate.
LinkRate rate_of(const Experiment& experiment, const emulator::PairParams& pair, double rtt_s,
                 const emulator::PairParams& paced_pair, const LinkModel& model, bool cross_dc) {
  LinkRate link;
  const int paced_streams = experiment.pacing && cross_dc ? std::max(1, experiment.streams) : 0;
  link.tcp = tcp_path_for(pair, rtt_s, model, experiment.scale, paced_streams);
  if (paced_streams > 0)
    link.tcp.max_pacing_bps = tcp_path_for(paced_pair, rtt_s, model, experiment.scale, paced_streams).max_pacing_bps;
  link.capacity_bps = link.tcp.rate_bps;
  link.delay_ns = static_cast<double>(pair.delay_ns);
  link.stream_ceiling_bps = std::min(link.tcp.flow_rate_bps, link.tcp.max_pacing_bps);
  if (model.stream_window_bytes > 0 && rtt_s > 0)
    link.stream_ceiling_bps = std::min(link.stream_ceiling_bps, link.tcp.window_bytes * 8 / rtt_s);
  return link;
}

}  // namespace

LinkRate link_rate(const Experiment& experiment, const emulator::Scenario& scenario, const LinkModel& model, int src,
                   int dst) {
  const emulator::PairParams pair = scenario.pair(src, dst);
  return rate_of(experiment, pair, static_cast<double>(scenario.rtt_ns(src, dst)) / 1e9, pair, model, src != dst);
}

LinkRate link_rate_at(const Experiment& experiment, const emulator::Scenario& scenario, const LinkModel& model, int src,
                      int dst, std::uint64_t at_ns) {
  const emulator::PairAt there = emulator::pair_at(scenario, src, dst, at_ns);
  const emulator::PairAt back = emulator::pair_at(scenario, dst, src, at_ns);
  const double rtt_s = static_cast<double>(there.params.delay_ns + back.params.delay_ns) / 1e9;
  LinkRate link = rate_of(experiment, there.params, rtt_s, scenario.pair(src, dst), model, src != dst);
  if (there.paused) link.capacity_bps = link.tcp.rate_bps = 0;
  return link;
}

double transfer_cap_bps(const LinkRate& link, double streams) { return link.stream_ceiling_bps * streams; }

double alone_rate_bps(const LinkRate& link, double streams) {
  return std::min(link.capacity_bps, transfer_cap_bps(link, streams));
}

}  // namespace detail

TcpPath tcp_path_for(const emulator::PairParams& there, double rtt_s, const LinkModel& model, double scale,
                     int paced_streams) {
  TcpPath path;
  if (there.rate_bps > 0) path.rate_bps = static_cast<double>(there.rate_bps) * model.payload_share * scale;
  double flow = kInf;
  if (there.flow_rate_bps > 0) flow = static_cast<double>(there.flow_rate_bps) * model.payload_share;
  if (model.per_stream_ceiling_bps > 0) flow = std::min(flow, model.per_stream_ceiling_bps);
  path.flow_rate_bps = flow * scale;
  path.delay_s = static_cast<double>(there.delay_ns) / 1e9;
  path.rtt_s = rtt_s;
  path.slow_start_after_idle = model.slow_start_after_idle;
  path.paced = paced_streams > 0;
  if (path.paced && std::isfinite(path.rate_bps))
    path.max_pacing_bps = std::min(path.flow_rate_bps, path.rate_bps / paced_streams);
  if (model.stream_window_bytes > 0) path.window_bytes = model.stream_window_bytes * scale;
  if (model.stream_window_bytes > 0 && model.send_buffer_bytes > 0) {
    const double send_buffer = model.send_buffer_bytes * scale;
    emulator::ChunkWriter writer;
    writer.send_buffer_bytes = send_buffer;
    writer.chunk_bytes = kCrossDcChunkBytes + kChunkHeaderBytes;
    writer.room_bytes = chunk_room_bytes(send_buffer);
    writer.max_pacing_bytes_per_s = path.max_pacing_bps / 8;
    writer.link_bytes_per_s = std::min(path.rate_bps, path.flow_rate_bps) / 8;
    writer.rtt_s = rtt_s;
    path.window_bytes = std::min(path.window_bytes, emulator::chunk_writer_send_share(writer) * send_buffer);
  }
  return path;
}

int ring_flows_between(const Plan& plan, int src, int dst) {
  if (plan.allreduce_bytes == 0) return 0;
  int flows = 0;
  for (int stage = 0; stage < plan.experiment.parallel.pp; ++stage) {
    const auto& ring = plan.workers[static_cast<std::size_t>(plan.worker_id(stage, 0))].worker.allreduce_group;
    if (ring.size() < 2) continue;
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int from = plan.workers[static_cast<std::size_t>(ring[i])].worker.dc;
      const int to = plan.workers[static_cast<std::size_t>(ring[(i + 1) % ring.size()])].worker.dc;
      if (from == src && to == dst) {
        ++flows;
        break;
      }
    }
  }
  return flows;
}

double ring_stream_pacing_bps(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model, int src,
                              int dst) {
  const int rings = ring_flows_between(plan, src, dst);
  if (src == dst || rings < 2 || !plan.experiment.pacing) return kInf;
  const detail::LinkRate link = detail::link_rate(plan.experiment, scenario, model, src, dst);
  const int streams = std::max(1, plan.experiment.streams);
  const double together_bps = detail::transfer_cap_bps(link, static_cast<double>(rings * streams));
  if (!std::isfinite(link.capacity_bps) || together_bps <= link.capacity_bps) return kInf;
  return link.capacity_bps / (rings * streams);
}

LinkModel link_model_for(const emulator::Scenario& scenario, double scale) {
  LinkModel model;
  // The scaled hosts' buffers, in full-size bytes: tcp_path_for scales them back.
  const emulator::HostSettings host = scale_scenario(scenario, scale).host;
  model.stream_window_bytes = emulator::receive_window_bytes(host) / scale;
  model.send_buffer_bytes = static_cast<double>(host.tcp_wmem_max.value_or(emulator::kDefaultTcpWmemMax)) / scale;
  model.tcp_dynamics = true;
  model.slow_start_after_idle = scenario.host.tcp_slow_start_after_idle.value_or(true);
  model.payload_share = emulator::kPayloadShare;
  model.ack_share = kAckShareOfData;
  return model;
}

}  // namespace wanlab::harness
