// The control protocol's prefill, decode-sink and KV-gate messages: their
// fields on the wire (control_wire.hpp).
#include "control_wire.hpp"

namespace wanlab::harness::control::wire {

void write_fields(Writer& out, const PrefillHello& m) {
  out.i32(m.worker);
  out.i32(m.pid);
}
void write_fields(Writer& out, const SinkHello& m) {
  out.i32(m.sink);
  out.i32(m.pid);
}
void write_fields(Writer& out, const SinkAssign& m) {
  out.u32(m.ipv4);
  out.u16(m.port);
  out.u32(m.chunk_size);
  out.u64(m.max_message_bytes);
  out.i32(m.senders);
}
void write_fields(Writer& out, const PrefillAssign& m) {
  out.i32(m.worker);
  out.string(m.gpu_lease);
  out.u32(m.sink_ipv4);
  out.u16(m.sink_port);
  out.i32(m.streams);
  out.u32(m.chunk_size);
  out.u32(m.not_sent_lowat);
  out.boolean(m.gated);
  out.u64(m.piece_bytes);
  out.u64(m.max_kv_bytes);
  out.u64(m.step_ns);
}
void write_fields(Writer& out, const PrefillTask& m) {
  out.i32(m.batch);
  out.i32(m.chunk);
  out.i64(m.start_ns);
  out.i64(m.end_by_ns);
  out.i64(m.give_up_ns);
  out.u64(m.duration_ns);
  out.i32(m.first_layer);
  out.i32(m.end_layer);
  out.i32(m.tokens);
  out.u64(m.kv_bytes);
}
void write_fields(Writer& out, const PrefillDone& m) {
  out.i32(m.batch);
  out.i32(m.chunk);
  out.i64(m.start_ns);
  out.i64(m.end_ns);
  out.i32(m.first_layer);
  out.i32(m.end_layer);
}
void write_fields(Writer& out, const PrefillMissed& m) {
  out.i32(m.batch);
  out.i32(m.chunk);
  out.i64(m.at_ns);
  out.i64(m.busy_until_ns);
}
template <typename KvGateMessage>
void write_kv_gate(Writer& out, const KvGateMessage& m) {
  out.i32(m.batch);
  out.i32(m.piece);
}
void write_fields(Writer& out, const KvGateRequest& m) { write_kv_gate(out, m); }
void write_fields(Writer& out, const KvGateGrant& m) { write_kv_gate(out, m); }
void write_fields(Writer& out, const KvGateRelease& m) { write_kv_gate(out, m); }
void write_fields(Writer& out, const KvSent& m) {
  out.i32(m.batch);
  out.i64(m.start_ns);
  out.i64(m.written_ns);
}
void write_fields(Writer& out, const KvArrived& m) {
  out.i32(m.batch);
  out.i32(m.worker);
  out.u64(m.bytes);
  out.i64(m.at_ns);
}

Message read_sink_hello(Reader& in) {
  SinkHello m;
  m.sink = in.index("sink");
  m.pid = in.index("pid");
  return m;
}

Message read_prefill_hello(Reader& in) {
  PrefillHello m;
  m.worker = in.index("worker");
  m.pid = in.index("pid");
  return m;
}

Message read_sink_assign(Reader& in) {
  SinkAssign m;
  m.ipv4 = in.u32("ipv4");
  m.port = in.u16("port");
  m.chunk_size = in.u32("chunk_size");
  m.max_message_bytes = in.u64("max_message_bytes");
  m.senders = in.index("senders");
  return m;
}

Message read_prefill_assign(Reader& in) {
  PrefillAssign m;
  m.worker = in.index("worker");
  m.gpu_lease = in.string("gpu_lease");
  m.sink_ipv4 = in.u32("sink_ipv4");
  m.sink_port = in.u16("sink_port");
  m.streams = in.index("streams");
  m.chunk_size = in.u32("chunk_size");
  m.not_sent_lowat = in.u32("not_sent_lowat");
  m.gated = in.boolean("gated");
  m.piece_bytes = in.u64("piece_bytes");
  m.max_kv_bytes = in.u64("max_kv_bytes");
  m.step_ns = in.u64("step_ns");
  if (m.step_ns == 0) in.fail("step_ns is 0");
  return m;
}

Message read_prefill_task(Reader& in) {
  PrefillTask m;
  m.batch = in.index("batch");
  m.chunk = in.index("chunk");
  m.start_ns = in.i64("start_ns");
  m.end_by_ns = in.i64("end_by_ns");
  m.give_up_ns = in.i64("give_up_ns");
  m.duration_ns = in.u64("duration_ns");
  m.first_layer = in.index("first_layer");
  m.end_layer = in.index("end_layer");
  m.tokens = in.index("tokens");
  m.kv_bytes = in.u64("kv_bytes");
  if (m.end_layer < m.first_layer) in.fail(fmt::format("layers [{}, {}) are backwards", m.first_layer, m.end_layer));
  if (m.end_layer == m.first_layer) in.fail(fmt::format("empty layer range [{}, {})", m.first_layer, m.end_layer));
  if (m.end_by_ns < m.start_ns + static_cast<std::int64_t>(m.duration_ns))
    in.fail(fmt::format("the slot's end ({}) before its start ({}) + duration ({})", m.end_by_ns, m.start_ns,
                        m.duration_ns));
  return m;
}

Message read_prefill_done(Reader& in) {
  PrefillDone m;
  m.batch = in.index("batch");
  m.chunk = in.index("chunk");
  m.start_ns = in.i64("start_ns");
  m.end_ns = in.i64("end_ns");
  if (m.end_ns < m.start_ns) in.fail(fmt::format("chunk ends ({}) before it starts ({})", m.end_ns, m.start_ns));
  m.first_layer = in.index("first_layer");
  m.end_layer = in.index("end_layer");
  if (m.end_layer <= m.first_layer) in.fail(fmt::format("empty layer range [{}, {})", m.first_layer, m.end_layer));
  return m;
}

Message read_prefill_missed(Reader& in) {
  PrefillMissed m;
  m.batch = in.index("batch");
  m.chunk = in.index("chunk");
  m.at_ns = in.i64("at_ns");
  m.busy_until_ns = in.i64("busy_until_ns");
  return m;
}

Message read_kv_sent(Reader& in) {
  KvSent m;
  m.batch = in.index("batch");
  m.start_ns = in.i64("start_ns");
  m.written_ns = in.i64("written_ns");
  if (m.written_ns < m.start_ns) in.fail(fmt::format("written ({}) before it started ({})", m.written_ns, m.start_ns));
  return m;
}

Message read_kv_arrived(Reader& in) {
  KvArrived m;
  m.batch = in.index("batch");
  m.worker = in.index("worker");
  m.bytes = in.u64("bytes");
  m.at_ns = in.i64("at_ns");
  return m;
}

}  // namespace wanlab::harness::control::wire
