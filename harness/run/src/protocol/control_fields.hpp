// Each control message's fields in their order on the wire: one list that
// the Writer (encode) and the Reader (decode) both walk, so that the two
// cannot drift apart. `fields(wire, m)` names each field for the Reader's
// errors; `check(in, m)` is what a decoded message must satisfy besides its
// fields' own ranges.
#pragma once

#include <concepts>
#include <type_traits>

#include "protocol/control_wire.hpp"
#include "wanlab/transport/options.hpp"

namespace wanlab::harness::control::wire {

// T is M, const (the Writer's) or not (the Reader's).
template <typename T, typename M>
concept Is = std::same_as<std::remove_const_t<T>, M>;
template <typename T, typename... Ms>
concept OneOf = (Is<T, Ms> || ...);

// ---- the parts of messages ------------------------------------------------

template <typename Wire>
void fields(Wire& w, Is<Op> auto& op) {
  w.op_kind("op.kind", op.kind);
  w.index_or_none("op.microbatch", op.microbatch);
  w.index_or_none("op.peer", op.peer);
  w.u64("op.bytes", op.bytes);
  w.u64("op.duration_ns", op.duration_ns);
  w.boolean("op.cross_dc", op.cross_dc);
  w.index_or_none("op.link_slot", op.link_slot);
  w.boolean("op.within_dc", op.within_dc);
  w.boolean("op.overlapped", op.overlapped);
}

// The worker's identity in its plan (the ops travel beside it).
template <typename Wire>
void fields(Wire& w, Is<Worker> auto& worker) {
  w.index("worker.id", worker.id);
  w.index("worker.stage", worker.stage);
  w.index("worker.replica", worker.replica);
  w.index("worker.dc", worker.dc);
  w.string("worker.dc_name", worker.dc_name);
  w.string("worker.host", worker.host);
  w.indexes("worker.allreduce_group", worker.allreduce_group);
  w.indexes("worker.dc_group", worker.dc_group);
}

template <typename Wire>
void fields(Wire& w, Is<ChannelTuning> auto& tuning) {
  w.u16("tuning.port", tuning.port);
  w.u32("tuning.chunk_size", tuning.chunk_size);
  w.u32("tuning.not_sent_lowat", tuning.not_sent_lowat);
}

template <typename Wire>
void fields(Wire& w, Is<PeerAddress> auto& peer) {
  w.index("peer.worker", peer.worker);
  w.u32("peer.ipv4", peer.ipv4);
  w.u16("peer.port", peer.port);
  w.boolean("peer.cross_dc", peer.cross_dc);
  w.u64("peer.pacing_rate", peer.pacing_rate);
}

template <typename Wire>
void fields(Wire& w, Is<Event> auto& e) {
  w.index("event.worker", e.worker);
  w.index("event.iteration", e.iteration);
  w.index("event.op_index", e.op_index);
  w.op_kind("event.kind", e.kind);
  w.index_or_none("event.microbatch", e.microbatch);
  w.index_or_none("event.peer", e.peer);
  w.u64("event.bytes", e.bytes);
  w.i64("event.start_ns", e.start_ns);
  w.i64("event.end_ns", e.end_ns);
  w.boolean("event.cross_dc", e.cross_dc);
  w.i64("event.gpu_wait_ns", e.gpu_wait_ns);
  w.i64("event.wake_late_ns", e.wake_late_ns);
}

template <typename Wire>
void fields(Wire& w, Is<Arrival> auto& a) {
  w.index("arrival.sender", a.sender);
  w.index("arrival.sender_op", a.sender_op);
  w.i64("arrival.arrival_ns", a.arrival_ns);
  w.i64("arrival.first_byte_ns", a.first_byte_ns);
}

template <typename Wire>
void fields(Wire& w, Is<StreamAtStart> auto& stream) {
  w.index("stream.index", stream.stream);
  w.u64("stream.bytes", stream.bytes);
  w.u32("stream.cwnd", stream.cwnd);
  w.u32("stream.srtt_us", stream.srtt_us);
  w.u32("stream.retransmitted", stream.retransmitted);
}

template <typename Wire>
void fields(Wire& w, Is<SendRecord> auto& s) {
  w.index("send.op_index", s.op_index);
  w.i64("send.queued_ns", s.queued_ns);
  w.i64("send.first_sent_ns", s.first_sent_ns);
  w.i64("send.last_sent_ns", s.last_sent_ns);
  w.list("send.streams", s.streams);
}

// ---- training's messages --------------------------------------------------

template <typename Wire, typename M>
requires std::is_empty_v<M>
void fields(Wire&, M&) {}

template <typename Wire>
void fields(Wire& w, Is<Hello> auto& m) {
  w.index("worker", m.worker);
  w.index("pid", m.pid);
}

template <typename Wire>
void fields(Wire& w, Is<Assign> auto& m) {
  fields(w, m.plan.worker);
  w.list("ops", m.plan.ops);
  w.u32("ipv4", m.ipv4);
  fields(w, m.intra_dc);
  fields(w, m.cross_dc);
  w.list("peers", m.peers);
  w.index("cross_dc_streams", m.cross_dc_streams);
  w.index("iterations", m.iterations);
  w.string("gpu_lease", m.gpu_lease);
  w.boolean("make_gpu_lease", m.make_gpu_lease);
  w.indexes("announced_ops", m.announced_ops);
  w.u64("announce_lead_ns", m.announce_lead_ns);
}

template <typename Wire>
void fields(Wire& w, Is<Start> auto& m) {
  w.index("iteration", m.iteration);
}

template <typename Wire, typename M>
requires OneOf<M, GateRequest, GateGrant, GateRelease>
void fields(Wire& w, M& m) {
  w.index("iteration", m.iteration);
  w.index("op_index", m.op_index);
}

template <typename Wire>
void fields(Wire& w, Is<Report> auto& m) {
  w.index("iteration", m.iteration);
  w.list("events", m.events);
  w.list("arrivals", m.arrivals);
  w.list("sends", m.sends);
}

template <typename Wire>
void fields(Wire& w, Is<Failed> auto& m) {
  w.text("reason", m.reason);
}

// ---- BubbleTea's messages ---------------------------------------------------

template <typename Wire>
void fields(Wire& w, Is<PrefillHello> auto& m) {
  w.index("worker", m.worker);
  w.index("pid", m.pid);
}

template <typename Wire>
void fields(Wire& w, Is<SinkHello> auto& m) {
  w.index("sink", m.sink);
  w.index("pid", m.pid);
}

template <typename Wire>
void fields(Wire& w, Is<SinkAssign> auto& m) {
  w.u32("ipv4", m.ipv4);
  w.u16("port", m.port);
  w.u32("chunk_size", m.chunk_size);
  w.u64("max_message_bytes", m.max_message_bytes);
  w.index("senders", m.senders);
}

template <typename Wire>
void fields(Wire& w, Is<PrefillAssign> auto& m) {
  w.index("worker", m.worker);
  w.string("gpu_lease", m.gpu_lease);
  w.index("sink", m.sink);
  w.u32("sink_ipv4", m.sink_ipv4);
  w.u16("sink_port", m.sink_port);
  w.index("streams", m.streams);
  w.u32("chunk_size", m.chunk_size);
  w.u32("not_sent_lowat", m.not_sent_lowat);
  w.boolean("gated", m.gated);
  w.u64("piece_bytes", m.piece_bytes);
  w.u64("max_kv_bytes", m.max_kv_bytes);
  w.u64("intra_host_bps", m.intra_host_bps);
  w.u64("step_ns", m.step_ns);
}

template <typename Wire>
void fields(Wire& w, Is<PrefillTask> auto& m) {
  w.index("batch", m.batch);
  w.index("chunk", m.chunk);
  w.i64("start_ns", m.start_ns);
  w.i64("end_by_ns", m.end_by_ns);
  w.i64("give_up_ns", m.give_up_ns);
  w.u64("duration_ns", m.duration_ns);
  w.index("first_layer", m.first_layer);
  w.index("end_layer", m.end_layer);
  w.index("tokens", m.tokens);
  w.u64("kv_bytes", m.kv_bytes);
}

template <typename Wire>
void fields(Wire& w, Is<PrefillDone> auto& m) {
  w.index("batch", m.batch);
  w.index("chunk", m.chunk);
  w.i64("start_ns", m.start_ns);
  w.i64("end_ns", m.end_ns);
  w.index("first_layer", m.first_layer);
  w.index("end_layer", m.end_layer);
}

template <typename Wire>
void fields(Wire& w, Is<PrefillMissed> auto& m) {
  w.index("batch", m.batch);
  w.index("chunk", m.chunk);
  w.i64("at_ns", m.at_ns);
  w.i64("busy_until_ns", m.busy_until_ns);
}

template <typename Wire, typename M>
requires OneOf<M, KvGateRequest, KvGateGrant, KvGateRelease>
void fields(Wire& w, M& m) {
  w.index("batch", m.batch);
  w.index("piece", m.piece);
}

template <typename Wire>
void fields(Wire& w, Is<KvSent> auto& m) {
  w.index("batch", m.batch);
  w.i64("start_ns", m.start_ns);
  w.i64("written_ns", m.written_ns);
}

template <typename Wire>
void fields(Wire& w, Is<KvArrived> auto& m) {
  w.index("batch", m.batch);
  w.index("worker", m.worker);
  w.u64("bytes", m.bytes);
  w.i64("at_ns", m.at_ns);
}

// ---- clocks across machines ---------------------------------------------------

template <typename Wire>
void fields(Wire& w, Is<ClockProbe> auto& m) {
  w.index("sequence", m.sequence);
  w.i64("coordinator_ns", m.coordinator_ns);
}

template <typename Wire>
void fields(Wire& w, Is<ClockReply> auto& m) {
  w.index("sequence", m.sequence);
  w.i64("coordinator_ns", m.coordinator_ns);
  w.i64("worker_ns", m.worker_ns);
}

template <typename Wire>
void fields(Wire& w, Is<ComputeDone> auto& m) {
  w.index("iteration", m.iteration);
  w.index("op_index", m.op_index);
  w.i64("end_ns", m.end_ns);
}

// ---- what a decoded message must also satisfy --------------------------------

template <typename M>
void check(Reader&, const M&) {}

inline void check(Reader& in, const Event& e) {
  if (e.end_ns < e.start_ns) in.fail(fmt::format("event ends ({}) before it starts ({})", e.end_ns, e.start_ns));
  if (e.gpu_wait_ns < 0 || e.wake_late_ns < 0)
    in.fail(fmt::format("event waited {} ns for the GPU and woke {} ns late, expected >= 0", e.gpu_wait_ns,
                        e.wake_late_ns));
}

inline void check(Reader& in, const Arrival& a) {
  if (a.first_byte_ns > a.arrival_ns)
    in.fail(fmt::format("arrival of worker {} op {}: first byte ({}) after the whole message ({})", a.sender,
                        a.sender_op, a.first_byte_ns, a.arrival_ns));
}

inline void check(Reader& in, const SendRecord& s) {
  if (s.first_sent_ns < s.queued_ns || s.last_sent_ns < s.first_sent_ns)
    in.fail(fmt::format("send of op {}: queued {}, first byte sent {}, last {} are out of order", s.op_index,
                        s.queued_ns, s.first_sent_ns, s.last_sent_ns));
  if (s.streams.size() > transport::kMaxConnections)
    in.fail(fmt::format("send.streams says {} streams, a channel has at most {}", s.streams.size(),
                        transport::kMaxConnections));
}

inline void check(Reader& in, const PrefillAssign& m) {
  if (m.step_ns == 0) in.fail("step_ns is 0");
}

inline void check(Reader& in, const PrefillTask& m) {
  if (m.end_layer < m.first_layer) in.fail(fmt::format("layers [{}, {}) are backwards", m.first_layer, m.end_layer));
  if (m.end_layer == m.first_layer) in.fail(fmt::format("empty layer range [{}, {})", m.first_layer, m.end_layer));
  if (m.end_by_ns < m.start_ns + static_cast<std::int64_t>(m.duration_ns))
    in.fail(fmt::format("the slot's end ({}) before its start ({}) + duration ({})", m.end_by_ns, m.start_ns,
                        m.duration_ns));
}

inline void check(Reader& in, const PrefillDone& m) {
  if (m.end_ns < m.start_ns) in.fail(fmt::format("chunk ends ({}) before it starts ({})", m.end_ns, m.start_ns));
  if (m.end_layer <= m.first_layer) in.fail(fmt::format("empty layer range [{}, {})", m.first_layer, m.end_layer));
}

inline void check(Reader& in, const KvSent& m) {
  if (m.written_ns < m.start_ns) in.fail(fmt::format("written ({}) before it started ({})", m.written_ns, m.start_ns));
}

template <typename Item>
std::size_t encoded_size() {
  static const std::size_t size = [] {
    Writer out;
    const Item empty{};
    fields(out, empty);
    return out.size();
  }();
  return size;
}

}  // namespace wanlab::harness::control::wire
