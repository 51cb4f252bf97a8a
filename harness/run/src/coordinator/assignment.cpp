#include "coordinator/assignment.hpp"

#include <algorithm>
#include <cmath>

#include "protocol/data_ports.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/model/tcp_model.hpp"
#include "wanlab/transport/options.hpp"
#include "wanlab/transport/wire.hpp"

namespace wanlab::harness::run_detail {
namespace {

namespace ctl = control;
namespace em = wanlab::emulator;

constexpr std::uint32_t kCrossDcChunk = kCrossDcChunkBytes;  // tcp_model.hpp: the simulator models the striping
// The simulator's window model takes the writer's room from tcp_model.hpp.
static_assert(kChunkHeaderBytes == transport::wire::kChunkHeaderSize);
static_assert(chunk_room_bytes(41984) ==
              transport::send_room_for_chunk(kCrossDcChunk + transport::wire::kChunkHeaderSize, 41984));
static_assert(chunk_room_bytes(409600) ==
              transport::send_room_for_chunk(kCrossDcChunk + transport::wire::kChunkHeaderSize, 409600));

// Intra-DC channels carry the large all-reduce pieces: large chunks, few
// wake-ups. Cross-DC channels take small chunks and a small unsent
// backlog, so that a gated send's "all written" comes when nearly all of
// its bytes have left (the gate then hands the link on), and so that an
// activation spreads over the streams. (A chunk costs a wake-up and a
// write: about 50 us on a loaded two-core machine.)
ctl::ChannelTuning intra_dc_tuning(int id) {
  return {static_cast<std::uint16_t>(kIntraDcPort + id), transport::kDefaultChunkSize, ctl::kBulkUnsentLowat};
}
ctl::ChannelTuning cross_dc_tuning(int id) {
  return {static_cast<std::uint16_t>(kCrossDcPort + id), kCrossDcChunk, kCrossDcChunk};
}

// Bytes/s per connection of `from`'s sends to `to`: the simulator's pacing
// for the directed pair (tcp_path_for: its payload rate x scale over the
// streams, at most its flow rate); 0 where the pair is unlimited or the
// experiment turns pacing off. The payload rate, not the link's: TCP's own
// pacing counts less of a segment than the emulator charges for its frame
// (1514 bytes for 1448 of data), so streams paced at the link's rate
// together overran it and built a queue (docs/RUNTIME.md, "Pacing").
std::uint64_t pacing_rate(const Plan& plan, const em::Scenario& scenario, const LinkModel& model, const Worker& from,
                          const Worker& to) {
  const Experiment& experiment = plan.experiment;
  if (!experiment.pacing) return 0;
  const em::PairParams pair = scenario.pair(from.dc, to.dc);
  if (pair.rate_bps == 0) return 0;
  const double rtt_s = static_cast<double>(scenario.rtt_ns(from.dc, to.dc)) / 1e9;
  const TcpPath path = tcp_path_for(pair, rtt_s, model, experiment.scale, std::max(1, experiment.streams));
  if (!std::isfinite(path.max_pacing_bps)) return 0;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(path.max_pacing_bps / 8));
}

// Bytes/s per connection of `from`'s ring all-reduce sends to `to`, where
// several rings share the pair (simulate.hpp: ring_stream_pacing_bps, the
// simulator's figure); `paced` otherwise.
std::uint64_t ring_pacing_rate(const Plan& plan, const em::Scenario& scenario, const LinkModel& model,
                               const Worker& from, const Worker& to, std::uint64_t paced) {
  const double ring_bps = ring_stream_pacing_bps(plan, scenario, model, from.dc, to.dc);
  if (!std::isfinite(ring_bps)) return paced;
  return std::min(paced, std::max<std::uint64_t>(1, static_cast<std::uint64_t>(ring_bps / 8)));
}

bool in_ring(const Worker& worker, int peer) {
  const auto& ring = worker.allreduce_group;
  return std::find(ring.begin(), ring.end(), peer) != ring.end();
}

}  // namespace

std::set<int> peers_of(const WorkerPlan& worker) {
  std::set<int> peers;
  auto add_neighbours = [&](const std::vector<int>& group) {
    const auto me = std::find(group.begin(), group.end(), worker.worker.id);
    if (group.size() < 2 || me == group.end()) return;
    const auto n = group.size();
    const auto position = static_cast<std::size_t>(me - group.begin());
    peers.insert(group[(position + 1) % n]);
    peers.insert(group[(position + n - 1) % n]);
  };
  for (const Op& op : worker.ops) {
    if ((op.kind == OpKind::send || op.kind == OpKind::recv) && op.peer >= 0) peers.insert(op.peer);
    if (op.kind == OpKind::allreduce && op.bytes > 0)
      add_neighbours(op.within_dc ? worker.worker.dc_group : worker.worker.allreduce_group);
  }
  peers.erase(worker.worker.id);
  return peers;
}

ctl::Assign make_assignment(const Plan& plan, const em::Scenario& scenario, const std::vector<const em::Host*>& hosts,
                            int id) {
  const WorkerPlan& self = plan.workers.at(static_cast<std::size_t>(id));
  ctl::Assign assign;
  assign.plan = self;
  assign.ipv4 = hosts.at(static_cast<std::size_t>(id))->ipv4;
  assign.intra_dc = intra_dc_tuning(id);
  assign.cross_dc = cross_dc_tuning(id);
  // The simulator's link model of this testbed: its pacing is the coordinator's.
  const LinkModel model = link_model_for(scenario, plan.experiment.scale);
  for (int peer : peers_of(self)) {
    const Worker& other = plan.workers.at(static_cast<std::size_t>(peer)).worker;
    const bool cross = other.dc != self.worker.dc;
    const auto port = cross ? cross_dc_tuning(peer).port : intra_dc_tuning(peer).port;
    std::uint64_t pacing = cross ? pacing_rate(plan, scenario, model, self.worker, other) : 0;
    if (pacing > 0 && in_ring(self.worker, peer))
      pacing = ring_pacing_rate(plan, scenario, model, self.worker, other, pacing);
    assign.peers.push_back(ctl::PeerAddress{peer, hosts.at(static_cast<std::size_t>(peer))->ipv4, port, cross, pacing});
  }
  assign.cross_dc_streams = std::max(1, plan.experiment.streams);
  assign.iterations = plan.experiment.iterations;
  return assign;
}

}  // namespace wanlab::harness::run_detail
