#include "worker/worker_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "wanlab/harness/run/gpu.hpp"

namespace wanlab::harness::run_detail {

const control::PeerAddress& WorkerLayout::peer(int worker) const {
  for (const auto& p : assign_.peers)
    if (p.worker == worker) return p;
  throw WorkerFailure(fmt::format("worker {} is not among my peers", worker));
}

const std::vector<int>& WorkerLayout::ring_of(const Op& op) const {
  return op.within_dc ? assign_.plan.worker.dc_group : assign_.plan.worker.allreduce_group;
}

int WorkerLayout::ring_member(const std::vector<int>& group, int offset) const {
  const auto me = std::find(group.begin(), group.end(), id_);
  if (group.size() < 2 || me == group.end()) return -1;
  const auto n = static_cast<int>(group.size());
  return group[static_cast<std::size_t>((static_cast<int>(me - group.begin()) + offset % n + n) % n)];
}

std::uint64_t WorkerLayout::allreduce_piece(std::size_t members, std::uint64_t bytes) {
  const std::uint64_t steps = members > 1 ? 2 * (members - 1) : 1;
  return (bytes + steps - 1) / steps;
}

std::uint64_t WorkerLayout::largest_payload(bool incoming) const {
  std::uint64_t largest = 0;
  const OpKind point_to_point = incoming ? OpKind::recv : OpKind::send;
  for (const Op& op : assign_.plan.ops) {
    if (op.kind == point_to_point && !same_host(op.peer)) largest = std::max(largest, op.bytes);
    if (op.kind != OpKind::allreduce) continue;
    const std::vector<int>& ring = ring_of(op);
    const int ring_peer = ring_member(ring, incoming ? -1 : 1);
    if (ring_peer >= 0 && !same_host(ring_peer)) largest = std::max(largest, allreduce_piece(ring.size(), op.bytes));
  }
  return largest;
}

control::SendRecord send_record(int op_index, std::int64_t queued_ns, const transport::SendTicket& ticket) {
  control::SendRecord record;
  record.op_index = op_index;
  record.queued_ns = queued_ns;
  record.first_sent_ns = std::max(queued_ns, monotonic_ns(ticket.started_at().value()));
  record.last_sent_ns = std::max(record.first_sent_ns, monotonic_ns(ticket.written_at().value()));
  for (const auto& stream : ticket.streams())
    record.streams.push_back(
        StreamAtStart{static_cast<int>(stream.index), stream.bytes, stream.cwnd, stream.srtt_us, stream.retransmitted});
  return record;
}

}  // namespace wanlab::harness::run_detail
