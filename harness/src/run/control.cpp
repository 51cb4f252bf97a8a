#include "wanlab/harness/control.hpp"

#include <fmt/format.h>

#include <type_traits>

#include "control_wire.hpp"
#include "wanlab/transport/options.hpp"

namespace wanlab::harness::control {
namespace {

using namespace wire;

// Type bytes, in the order of the Message variant (index + 1).
constexpr const char* kTypeNames[] = {
    "hello",          "assign",          "listening",     "connect",         "ready",        "start",
    "gate_request",   "gate_grant",      "gate_release",  "report",          "stop",         "failed",
    "prefill_hello",  "sink_hello",      "sink_assign",   "prefill_assign",  "prefill_task", "prefill_done",
    "prefill_missed", "kv_gate_request", "kv_gate_grant", "kv_gate_release", "kv_sent",      "kv_arrived"};
static_assert(std::size(kTypeNames) == std::variant_size_v<Message>);

constexpr int kMaxOpKind = static_cast<int>(OpKind::allreduce);

// Fixed sizes, for bounding list counts before allocating.
constexpr std::size_t kOpBytes = 1 + 4 + 4 + 8 + 8 + 1 + 4;
constexpr std::size_t kPeerBytes = 4 + 4 + 2 + 1 + 8;
constexpr std::size_t kEventBytes = 4 + 4 + 4 + 1 + 4 + 4 + 8 + 8 + 8 + 1;
constexpr std::size_t kArrivalBytes = 4 + 4 + 8 + 8;
constexpr std::size_t kStreamBytes = 4 + 8 + 4 + 4;
constexpr std::size_t kSendRecordBytes = 4 + 8 + 8 + 8 + 4;

OpKind op_kind(Reader& in, const char* field) {
  const int v = in.u8(field);
  if (v > kMaxOpKind) in.fail(fmt::format("{} is {}, expected 0..{}", field, v, kMaxOpKind));
  return static_cast<OpKind>(v);
}

void write_op(Writer& out, const Op& op) {
  out.u8(static_cast<std::uint8_t>(op.kind));
  out.i32(op.microbatch);
  out.i32(op.peer);
  out.u64(op.bytes);
  out.u64(op.duration_ns);
  out.boolean(op.cross_dc);
  out.i32(op.link_slot);
}

Op read_op(Reader& in) {
  Op op;
  op.kind = op_kind(in, "op.kind");
  op.microbatch = in.index_or_none("op.microbatch");
  op.peer = in.index_or_none("op.peer");
  op.bytes = in.u64("op.bytes");
  op.duration_ns = in.u64("op.duration_ns");
  op.cross_dc = in.boolean("op.cross_dc");
  op.link_slot = in.index_or_none("op.link_slot");
  return op;
}

void write_event(Writer& out, const Event& e) {
  out.i32(e.worker);
  out.i32(e.iteration);
  out.i32(e.op_index);
  out.u8(static_cast<std::uint8_t>(e.kind));
  out.i32(e.microbatch);
  out.i32(e.peer);
  out.u64(e.bytes);
  out.i64(e.start_ns);
  out.i64(e.end_ns);
  out.boolean(e.cross_dc);
}

Event read_event(Reader& in) {
  Event e;
  e.worker = in.index("event.worker");
  e.iteration = in.index("event.iteration");
  e.op_index = in.index("event.op_index");
  e.kind = op_kind(in, "event.kind");
  e.microbatch = in.index_or_none("event.microbatch");
  e.peer = in.index_or_none("event.peer");
  e.bytes = in.u64("event.bytes");
  e.start_ns = in.i64("event.start_ns");
  e.end_ns = in.i64("event.end_ns");
  e.cross_dc = in.boolean("event.cross_dc");
  if (e.end_ns < e.start_ns) in.fail(fmt::format("event ends ({}) before it starts ({})", e.end_ns, e.start_ns));
  return e;
}

void write_send_record(Writer& out, const SendRecord& s) {
  out.i32(s.op_index);
  out.i64(s.queued_ns);
  out.i64(s.first_sent_ns);
  out.i64(s.last_sent_ns);
  out.count(s.streams.size());
  for (const StreamAtStart& stream : s.streams) {
    out.i32(stream.stream);
    out.u64(stream.bytes);
    out.u32(stream.cwnd);
    out.u32(stream.srtt_us);
  }
}

SendRecord read_send_record(Reader& in) {
  SendRecord s;
  s.op_index = in.index("send.op_index");
  s.queued_ns = in.i64("send.queued_ns");
  s.first_sent_ns = in.i64("send.first_sent_ns");
  s.last_sent_ns = in.i64("send.last_sent_ns");
  if (s.first_sent_ns < s.queued_ns || s.last_sent_ns < s.first_sent_ns)
    in.fail(fmt::format("send of op {}: queued {}, first byte sent {}, last {} are out of order", s.op_index,
                        s.queued_ns, s.first_sent_ns, s.last_sent_ns));
  const std::size_t streams = in.count("send.streams", kStreamBytes);
  if (streams > transport::kMaxConnections)
    in.fail(fmt::format("send.streams says {} streams, a channel has at most {}", streams, transport::kMaxConnections));
  for (std::size_t i = 0; i < streams; ++i) {
    StreamAtStart stream;
    stream.stream = in.index("stream.index");
    stream.bytes = in.u64("stream.bytes");
    stream.cwnd = in.u32("stream.cwnd");
    stream.srtt_us = in.u32("stream.srtt_us");
    s.streams.push_back(stream);
  }
  return s;
}

void write_fields(Writer& out, const Hello& m) {
  out.i32(m.worker);
  out.i32(m.pid);
}
void write_fields(Writer& out, const Assign& m) {
  const Worker& w = m.plan.worker;
  out.i32(w.id);
  out.i32(w.stage);
  out.i32(w.replica);
  out.i32(w.dc);
  out.string(w.dc_name);
  out.string(w.host);
  out.count(w.allreduce_group.size());
  for (int id : w.allreduce_group) out.i32(id);
  out.count(m.plan.ops.size());
  for (const Op& op : m.plan.ops) write_op(out, op);
  out.u32(m.ipv4);
  for (const ChannelTuning* t : {&m.intra_dc, &m.cross_dc}) {
    out.u16(t->port);
    out.u32(t->chunk_size);
    out.u32(t->not_sent_lowat);
  }
  out.count(m.peers.size());
  for (const PeerAddress& p : m.peers) {
    out.i32(p.worker);
    out.u32(p.ipv4);
    out.u16(p.port);
    out.boolean(p.cross_dc);
    out.u64(p.pacing_rate);
  }
  out.i32(m.cross_dc_streams);
  out.i32(m.iterations);
  out.string(m.gpu_lease);
}
void write_fields(Writer&, const Listening&) {}
void write_fields(Writer&, const Connect&) {}
void write_fields(Writer&, const Ready&) {}
void write_fields(Writer&, const Stop&) {}
void write_fields(Writer& out, const Start& m) { out.i32(m.iteration); }
void write_fields(Writer& out, const GateRequest& m) {
  out.i32(m.iteration);
  out.i32(m.op_index);
}
void write_fields(Writer& out, const GateGrant& m) {
  out.i32(m.iteration);
  out.i32(m.op_index);
}
void write_fields(Writer& out, const GateRelease& m) {
  out.i32(m.iteration);
  out.i32(m.op_index);
}
void write_fields(Writer& out, const Report& m) {
  out.i32(m.iteration);
  out.count(m.events.size());
  for (const Event& e : m.events) write_event(out, e);
  out.count(m.arrivals.size());
  for (const Arrival& a : m.arrivals) {
    out.i32(a.sender);
    out.i32(a.sender_op);
    out.i64(a.arrival_ns);
    out.i64(a.first_byte_ns);
  }
  out.i64(m.delayed_ns);
  out.count(m.sends.size());
  for (const SendRecord& s : m.sends) write_send_record(out, s);
}
void write_fields(Writer& out, const Failed& m) { out.string(m.reason.substr(0, kMaxString)); }

Message read_hello(Reader& in) {
  Hello m;
  m.worker = in.index("worker");
  m.pid = in.index("pid");
  return m;
}

Message read_assign(Reader& in) {
  Assign m;
  Worker& w = m.plan.worker;
  w.id = in.index("worker.id");
  w.stage = in.index("worker.stage");
  w.replica = in.index("worker.replica");
  w.dc = in.index("worker.dc");
  w.dc_name = in.string("worker.dc_name");
  w.host = in.string("worker.host");
  const std::size_t group = in.count("worker.allreduce_group", 4);
  for (std::size_t i = 0; i < group; ++i) w.allreduce_group.push_back(in.index("worker.allreduce_group[]"));
  const std::size_t ops = in.count("ops", kOpBytes);
  for (std::size_t i = 0; i < ops; ++i) m.plan.ops.push_back(read_op(in));
  m.ipv4 = in.u32("ipv4");
  for (ChannelTuning* t : {&m.intra_dc, &m.cross_dc}) {
    t->port = in.u16("tuning.port");
    t->chunk_size = in.u32("tuning.chunk_size");
    t->not_sent_lowat = in.u32("tuning.not_sent_lowat");
  }
  const std::size_t peers = in.count("peers", kPeerBytes);
  for (std::size_t i = 0; i < peers; ++i) {
    PeerAddress p;
    p.worker = in.index("peer.worker");
    p.ipv4 = in.u32("peer.ipv4");
    p.port = in.u16("peer.port");
    p.cross_dc = in.boolean("peer.cross_dc");
    p.pacing_rate = in.u64("peer.pacing_rate");
    m.peers.push_back(p);
  }
  m.cross_dc_streams = in.index("cross_dc_streams");
  m.iterations = in.index("iterations");
  m.gpu_lease = in.string("gpu_lease");
  return m;
}

template <typename GateMessage>
Message read_gate(Reader& in) {
  GateMessage m;
  m.iteration = in.index("iteration");
  m.op_index = in.index("op_index");
  return m;
}

Message read_report(Reader& in) {
  Report m;
  m.iteration = in.index("iteration");
  const std::size_t events = in.count("events", kEventBytes);
  for (std::size_t i = 0; i < events; ++i) m.events.push_back(read_event(in));
  const std::size_t arrivals = in.count("arrivals", kArrivalBytes);
  for (std::size_t i = 0; i < arrivals; ++i) {
    Arrival a;
    a.sender = in.index("arrival.sender");
    a.sender_op = in.index("arrival.sender_op");
    a.arrival_ns = in.i64("arrival.arrival_ns");
    a.first_byte_ns = in.i64("arrival.first_byte_ns");
    if (a.first_byte_ns > a.arrival_ns)
      in.fail(fmt::format("arrival of worker {} op {}: first byte ({}) after the whole message ({})", a.sender,
                          a.sender_op, a.first_byte_ns, a.arrival_ns));
    m.arrivals.push_back(a);
  }
  m.delayed_ns = in.i64("delayed_ns");
  if (m.delayed_ns < 0) in.fail(fmt::format("delayed_ns is {}, expected >= 0", m.delayed_ns));
  const std::size_t sends = in.count("sends", kSendRecordBytes);
  for (std::size_t i = 0; i < sends; ++i) m.sends.push_back(read_send_record(in));
  return m;
}

Message read_fields(std::size_t index, Reader& in) {
  switch (index) {
    case 0: return read_hello(in);
    case 1: return read_assign(in);
    case 2: return Listening{};
    case 3: return Connect{};
    case 4: return Ready{};
    case 5: return Start{in.index("iteration")};
    case 6: return read_gate<GateRequest>(in);
    case 7: return read_gate<GateGrant>(in);
    case 8: return read_gate<GateRelease>(in);
    case 9: return read_report(in);
    case 10: return Stop{};
    case 11: return Failed{in.string("reason")};
    case 12: return read_prefill_hello(in);
    case 13: return read_sink_hello(in);
    case 14: return read_sink_assign(in);
    case 15: return read_prefill_assign(in);
    case 16: return read_prefill_task(in);
    case 17: return read_prefill_done(in);
    case 18: return read_prefill_missed(in);
    case 19: return read_kv_gate<KvGateRequest>(in);
    case 20: return read_kv_gate<KvGateGrant>(in);
    case 21: return read_kv_gate<KvGateRelease>(in);
    case 22: return read_kv_sent(in);
    default: return read_kv_arrived(in);
  }
}

std::uint32_t read_length(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

std::string type_name(const Message& message) { return kTypeNames[message.index()]; }

std::vector<std::byte> encode(const Message& message) {
  Writer out;
  out.u32(0);  // length, filled in below
  out.u8(static_cast<std::uint8_t>(message.index() + 1));
  std::visit([&](const auto& m) { write_fields(out, m); }, message);
  auto bytes = out.take();
  const std::size_t length = bytes.size() - 4;
  if (length > kMaxFrameBytes)
    throw ControlError(fmt::format("{} message of {} bytes exceeds the frame limit of {} bytes", type_name(message),
                                   length, kMaxFrameBytes));
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::byte>(length >> (8 * i));
  return bytes;
}

Message decode(std::span<const std::byte> body) {
  if (body.empty()) throw ControlError("malformed frame: empty (no type byte)");
  const int type = std::to_integer<int>(body[0]);
  if (type < 1 || type > static_cast<int>(std::size(kTypeNames)))
    throw ControlError(fmt::format("malformed frame: unknown type {} (expected 1..{})", type, std::size(kTypeNames)));
  const auto index = static_cast<std::size_t>(type - 1);
  Reader in(body.subspan(1), kTypeNames[index]);
  Message message = read_fields(index, in);
  in.finish();
  return message;
}

void FrameReader::feed(std::span<const std::byte> bytes) {
  if (consumed_ > 0 && consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::optional<Message> FrameReader::next() {
  const std::size_t available = buffer_.size() - consumed_;
  if (available < 4) return std::nullopt;
  const std::uint32_t length = read_length(buffer_.data() + consumed_);
  if (length == 0 || length > kMaxFrameBytes)
    throw ControlError(fmt::format("malformed frame: length {} (expected 1..{})", length, kMaxFrameBytes));
  if (available - 4 < length) return std::nullopt;
  const std::span<const std::byte> body(buffer_.data() + consumed_ + 4, length);
  consumed_ += 4 + length;
  Message message = decode(body);
  if (consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  return message;
}

}  // namespace wanlab::harness::control
