#include "wanlab/harness/control.hpp"

#include <fmt/format.h>

#include <cstring>
#include <type_traits>

#include "wanlab/transport/options.hpp"

namespace wanlab::harness::control {
namespace {

// Type bytes, in the order of the Message variant (index + 1).
constexpr const char* kTypeNames[] = {"hello",           "assign",        "listening",      "connect",
                                      "ready",           "start",         "gate_request",   "gate_grant",
                                      "gate_release",    "report",        "stop",           "failed",
                                      "prefill_hello",   "sink_hello",    "sink_assign",    "prefill_assign",
                                      "prefill_task",    "prefill_done",  "prefill_missed", "kv_gate_request",
                                      "kv_gate_grant",   "kv_gate_release", "kv_sent",      "kv_arrived"};
static_assert(std::size(kTypeNames) == std::variant_size_v<Message>);

constexpr std::uint32_t kMaxString = 4096;
constexpr int kMaxOpKind = static_cast<int>(OpKind::allreduce);

class Writer {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v) { little_endian(v, 2); }
  void u32(std::uint32_t v) { little_endian(v, 4); }
  void u64(std::uint64_t v) { little_endian(v, 8); }
  void i32(int v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void count(std::size_t n) { u32(static_cast<std::uint32_t>(n)); }
  void string(const std::string& s) {
    count(s.size());
    for (char c : s) u8(static_cast<std::uint8_t>(c));
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  void little_endian(std::uint64_t v, int size) {
    for (int i = 0; i < size; ++i) bytes_.push_back(static_cast<std::byte>(v >> (8 * i)));
  }
  std::vector<std::byte> bytes_;
};

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const char* type) : bytes_(bytes), type_(type) {}

  std::uint8_t u8(const char* field) { return static_cast<std::uint8_t>(little_endian(1, field)); }
  std::uint16_t u16(const char* field) { return static_cast<std::uint16_t>(little_endian(2, field)); }
  std::uint32_t u32(const char* field) { return static_cast<std::uint32_t>(little_endian(4, field)); }
  std::uint64_t u64(const char* field) { return little_endian(8, field); }
  std::int64_t i64(const char* field) { return static_cast<std::int64_t>(u64(field)); }
  int i32(const char* field) { return static_cast<int>(static_cast<std::int32_t>(u32(field))); }
  // Ids, indexes and counts of things: 0..INT32_MAX.
  int index(const char* field) {
    const int v = i32(field);
    if (v < 0) fail(fmt::format("{} is {}, expected >= 0", field, v));
    return v;
  }
  int index_or_none(const char* field) {
    const int v = i32(field);
    if (v < -1) fail(fmt::format("{} is {}, expected >= -1", field, v));
    return v;
  }
  bool boolean(const char* field) {
    const auto v = u8(field);
    if (v > 1) fail(fmt::format("{} is {}, expected 0 or 1", field, v));
    return v == 1;
  }
  // A list length, checked against the bytes left at `min_item_bytes` each.
  std::size_t count(const char* field, std::size_t min_item_bytes) {
    const std::uint32_t n = u32(field);
    if (min_item_bytes && n > left() / min_item_bytes)
      fail(fmt::format("{} says {} items, but only {} bytes follow", field, n, left()));
    return n;
  }
  std::string string(const char* field) {
    const std::size_t n = count(field, 1);
    if (n > kMaxString) fail(fmt::format("{} is {} bytes long, at most {} allowed", field, n, kMaxString));
    std::string s(n, '\0');
    std::memcpy(s.data(), bytes_.data() + at_, n);
    at_ += n;
    return s;
  }
  void finish() {
    if (left()) fail(fmt::format("{} bytes left over", left()));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ControlError(fmt::format("malformed {} frame at byte {}: {}", type_, at_ + 1, what));
  }

 private:
  std::size_t left() const { return bytes_.size() - at_; }
  std::uint64_t little_endian(int size, const char* field) {
    if (left() < static_cast<std::size_t>(size)) fail(fmt::format("truncated in {}", field));
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) v |= std::to_integer<std::uint64_t>(bytes_[at_ + i]) << (8 * i);
    at_ += size;
    return v;
  }
  std::span<const std::byte> bytes_;
  const char* type_;
  std::size_t at_ = 0;
};

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
    in.fail(fmt::format("the slot's end ({}) before its start ({}) + duration ({})", m.end_by_ns, m.start_ns, m.duration_ns));
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

template <typename KvGateMessage>
Message read_kv_gate(Reader& in) {
  KvGateMessage m;
  m.batch = in.index("batch");
  m.piece = in.index("piece");
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
