// The control protocol: every message survives encode/decode; every kind of
// malformed frame is a ControlError that says what was wrong, never a crash.
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/data_header.hpp"
#include "wanlab/harness/run/control.hpp"

namespace ctl = wanlab::harness::control;
using wanlab::harness::Event;
using wanlab::harness::Op;
using wanlab::harness::OpKind;

namespace {

ctl::Assign sample_assign() {
  ctl::Assign assign;
  auto& worker = assign.plan.worker;
  worker.id = 3;
  worker.stage = 1;
  worker.replica = 1;
  worker.dc = 2;
  worker.dc_name = "europe";
  worker.host = "europe-1";
  worker.allreduce_group = {1, 3};
  Op compute;
  compute.kind = OpKind::forward;
  compute.microbatch = 0;
  compute.duration_ns = 20'000'000;
  Op send;
  send.kind = OpKind::send;
  send.microbatch = 0;
  send.peer = 4;
  send.bytes = 1u << 20;
  send.cross_dc = true;
  send.link_slot = 7;
  Op allreduce;
  allreduce.kind = OpKind::allreduce;
  allreduce.bytes = 123456789012ull;
  assign.plan.ops = {compute, send, allreduce};
  assign.ipv4 = 0x0a4d0203;
  assign.intra_dc = {47003, 512u << 10, 256u << 10};
  assign.cross_dc = {48003, 16384, 16384};
  assign.peers = {{1, 0x0a4d0102, 47001, false, 0}, {4, 0x0a4d0001, 47004, true, 1'250'000}};
  assign.cross_dc_streams = 8;
  assign.iterations = 5;
  assign.gpu_lease = "/run/wanlab/t/harness/control/gpu-3.lease";
  assign.announced_ops = {2, 5};
  assign.announce_lead_ns = 21'500'000;
  assign.make_gpu_lease = true;
  return assign;
}

ctl::Report sample_report() {
  ctl::Report report;
  report.iteration = 2;
  Event e;
  e.worker = 3;
  e.iteration = 2;
  e.op_index = 1;
  e.kind = OpKind::send;
  e.microbatch = 0;
  e.peer = 4;
  e.bytes = 1u << 20;
  e.start_ns = 1'000'000'000'123;
  e.end_ns = 1'000'050'000'000;
  e.cross_dc = true;
  Event compute;
  compute.worker = 3;
  compute.iteration = 2;
  compute.op_index = 0;
  compute.kind = OpKind::forward;
  compute.microbatch = 0;
  compute.start_ns = 999'000'000'000;
  compute.end_ns = 1'000'000'000'000;
  compute.gpu_wait_ns = 1234;
  compute.wake_late_ns = 57'000;
  report.events = {compute, e};
  report.arrivals = {{1, 5, 999, 900}};
  report.sends = {{1, 100, 200, 300, {{0, 600, 10, 80'123, 4'000'000'000u}, {3, 424, 12, 81'000, 0}}}};
  return report;
}

std::vector<std::byte> body_of(const std::vector<std::byte>& frame) { return {frame.begin() + 4, frame.end()}; }

ctl::Message round_trip(const ctl::Message& message) {
  const auto frame = ctl::encode(message);
  std::uint32_t length = 0;
  std::memcpy(&length, frame.data(), 4);  // little-endian host
  BOOST_TEST(length == frame.size() - 4);
  return ctl::decode(body_of(frame));
}

std::string decode_error(const std::vector<std::byte>& body) {
  try {
    ctl::decode(body);
  } catch (const ctl::ControlError& error) {
    return error.what();
  }
  return "(no error)";
}

void put_u32(std::vector<std::byte>& bytes, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::byte>(value >> (8 * i));
}

}  // namespace

BOOST_AUTO_TEST_CASE(assign_round_trips) {
  const auto original = sample_assign();
  const auto decoded = std::get<ctl::Assign>(round_trip(original));
  BOOST_TEST(decoded.plan.worker.id == 3);
  BOOST_TEST(decoded.plan.worker.dc_name == "europe");
  BOOST_TEST(decoded.plan.worker.host == "europe-1");
  BOOST_TEST(decoded.plan.worker.allreduce_group == original.plan.worker.allreduce_group);
  BOOST_REQUIRE(decoded.plan.ops.size() == 3u);
  BOOST_TEST(static_cast<int>(decoded.plan.ops[1].kind) == static_cast<int>(OpKind::send));
  BOOST_TEST(decoded.plan.ops[1].peer == 4);
  BOOST_TEST(decoded.plan.ops[1].bytes == 1u << 20);
  BOOST_TEST(decoded.plan.ops[1].cross_dc);
  BOOST_TEST(decoded.plan.ops[1].link_slot == 7);
  BOOST_TEST(decoded.plan.ops[0].duration_ns == 20'000'000u);
  BOOST_TEST(decoded.plan.ops[2].microbatch == -1);
  BOOST_TEST(decoded.plan.ops[2].bytes == 123456789012ull);
  BOOST_TEST(decoded.ipv4 == 0x0a4d0203u);
  BOOST_TEST(decoded.intra_dc.port == 47003);
  BOOST_TEST(decoded.intra_dc.chunk_size == 512u << 10);
  BOOST_TEST(decoded.intra_dc.not_sent_lowat == 256u << 10);
  BOOST_TEST(decoded.cross_dc.port == 48003);
  BOOST_TEST(decoded.cross_dc.chunk_size == 16384u);
  BOOST_REQUIRE(decoded.peers.size() == 2u);
  BOOST_TEST(decoded.peers[1].worker == 4);
  BOOST_TEST(decoded.peers[1].cross_dc);
  BOOST_TEST(decoded.peers[1].pacing_rate == 1'250'000u);
  BOOST_TEST(!decoded.peers[0].cross_dc);
  BOOST_TEST(decoded.cross_dc_streams == 8);
  BOOST_TEST(decoded.iterations == 5);
  BOOST_TEST(decoded.gpu_lease == original.gpu_lease);
  BOOST_TEST(decoded.announced_ops == original.announced_ops);
  BOOST_TEST(decoded.announce_lead_ns == 21'500'000u);
  BOOST_TEST(decoded.make_gpu_lease);
}

BOOST_AUTO_TEST_CASE(report_and_small_messages_round_trip) {
  const auto report = std::get<ctl::Report>(round_trip(sample_report()));
  BOOST_REQUIRE(report.events.size() == 2u);
  BOOST_TEST(report.events[0].gpu_wait_ns == 1234);
  BOOST_TEST(report.events[0].wake_late_ns == 57'000);
  BOOST_TEST(report.events[1].start_ns == 1'000'000'000'123);
  BOOST_TEST(report.events[1].end_ns == 1'000'050'000'000);
  BOOST_TEST(report.events[1].peer == 4);
  BOOST_TEST(report.events[1].gpu_wait_ns == 0);
  BOOST_REQUIRE(report.arrivals.size() == 1u);
  BOOST_TEST(report.arrivals[0].sender_op == 5);
  BOOST_TEST(report.arrivals[0].arrival_ns == 999);
  BOOST_TEST(report.arrivals[0].first_byte_ns == 900);
  BOOST_REQUIRE(report.sends.size() == 1u);
  const ctl::SendRecord& send = report.sends[0];
  BOOST_TEST(send.op_index == 1);
  BOOST_TEST(send.queued_ns == 100);
  BOOST_TEST(send.first_sent_ns == 200);
  BOOST_TEST(send.last_sent_ns == 300);
  BOOST_REQUIRE(send.streams.size() == 2u);
  BOOST_TEST(send.streams[1].stream == 3);
  BOOST_TEST(send.streams[1].bytes == 424u);
  BOOST_TEST(send.streams[1].cwnd == 12u);
  BOOST_TEST(send.streams[0].srtt_us == 80'123u);
  BOOST_TEST(send.streams[0].retransmitted == 4'000'000'000u);

  BOOST_TEST(std::get<ctl::Hello>(round_trip(ctl::Hello{12, 4321})).pid == 4321);
  BOOST_TEST(std::get<ctl::Start>(round_trip(ctl::Start{9})).iteration == 9);
  BOOST_TEST(std::get<ctl::GateGrant>(round_trip(ctl::GateGrant{1, 17})).op_index == 17);
  BOOST_TEST(std::get<ctl::GateRelease>(round_trip(ctl::GateRelease{1, 18})).op_index == 18);
  BOOST_TEST(std::get<ctl::GateRequest>(round_trip(ctl::GateRequest{4, 2})).iteration == 4);
  BOOST_TEST(std::get<ctl::Failed>(round_trip(ctl::Failed{"channel from worker 2: reset"})).reason ==
             "channel from worker 2: reset");
  BOOST_TEST(std::holds_alternative<ctl::Stop>(round_trip(ctl::Stop{})));
  BOOST_TEST(std::holds_alternative<ctl::Ready>(round_trip(ctl::Ready{})));
  BOOST_TEST(ctl::type_name(ctl::GateRequest{}) == "gate_request");
}

BOOST_AUTO_TEST_CASE(malformed_bodies_are_errors_that_say_why) {
  BOOST_TEST(decode_error({}).find("empty") != std::string::npos);
  BOOST_TEST(decode_error({std::byte{0}}).find("unknown type 0") != std::string::npos);
  BOOST_TEST(decode_error({std::byte{99}}).find("unknown type 99") != std::string::npos);

  // Every truncation of a valid assign is rejected, never read past its end.
  const auto assign = body_of(ctl::encode(sample_assign()));
  for (std::size_t length = 1; length < assign.size(); ++length) {
    const std::vector<std::byte> cut(assign.begin(), assign.begin() + static_cast<long>(length));
    const std::string error = decode_error(cut);
    BOOST_TEST_CONTEXT("assign cut to " << length << " bytes") {
      BOOST_TEST(error.find("malformed assign frame") != std::string::npos);
    }
  }

  auto trailing = body_of(ctl::encode(ctl::Start{1}));
  trailing.push_back(std::byte{0});
  BOOST_TEST(decode_error(trailing).find("1 bytes left over") != std::string::npos);

  auto negative = body_of(ctl::encode(ctl::Start{1}));
  put_u32(negative, 1, 0xffffffff);
  BOOST_TEST(decode_error(negative).find("iteration is -1") != std::string::npos);

  // A report claiming more events than bytes follow is refused before allocating.
  auto report = body_of(ctl::encode(sample_report()));
  put_u32(report, 5, 0x7fffffff);
  BOOST_TEST(decode_error(report).find("events says 2147483647 items") != std::string::npos);

  // An op kind outside the enum.
  auto bad_kind = body_of(ctl::encode(sample_report()));
  bad_kind[1 + 4 + 4 + 12] = std::byte{42};
  BOOST_TEST(decode_error(bad_kind).find("event.kind is 42") != std::string::npos);

  // An event that ends before it starts.
  auto backwards = sample_report();
  std::swap(backwards.events[0].start_ns, backwards.events[0].end_ns);
  BOOST_TEST(decode_error(body_of(ctl::encode(backwards))).find("ends") != std::string::npos);

  // A boolean that is neither 0 nor 1.
  auto bad_bool = body_of(ctl::encode(sample_report()));
  bad_bool[1 + 4 + 4 + 45] = std::byte{2};
  BOOST_TEST(decode_error(bad_bool).find("event.cross_dc is 2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(malformed_transfer_records_in_a_report_are_errors_that_say_why) {
  // Every truncation of a report (its send records last) is refused.
  const auto whole = body_of(ctl::encode(sample_report()));
  for (std::size_t length = 1; length < whole.size(); ++length) {
    const std::vector<std::byte> cut(whole.begin(), whole.begin() + static_cast<long>(length));
    BOOST_TEST_CONTEXT("report cut to " << length << " bytes") {
      BOOST_TEST(decode_error(cut).find("malformed report frame") != std::string::npos);
    }
  }

  auto early = sample_report();
  early.arrivals[0].first_byte_ns = 1000;  // after the whole message (999)
  const std::string early_error = decode_error(body_of(ctl::encode(early)));
  BOOST_TEST(early_error.find("malformed report frame at byte ") == 0u, early_error);
  BOOST_TEST(early_error.find(": arrival of worker 1 op 5: first byte (1000) after the whole message (999)") !=
                 std::string::npos,
             early_error);

  auto disorder = sample_report();
  disorder.sends[0].last_sent_ns = 150;  // before the first byte (200)
  BOOST_TEST(decode_error(body_of(ctl::encode(disorder)))
                 .find("send of op 1: queued 100, first byte sent 200, last 150 "
                       "are out of order") != std::string::npos);

  auto unqueued = sample_report();
  unqueued.sends[0].queued_ns = 250;  // after the first byte
  BOOST_TEST(decode_error(body_of(ctl::encode(unqueued))).find("out of order") != std::string::npos);

  // More streams than a channel has: refused even when the bytes are there.
  auto crowded = sample_report();
  crowded.sends[0].streams.assign(65, wanlab::harness::StreamAtStart{});
  BOOST_TEST(
      decode_error(body_of(ctl::encode(crowded))).find("send.streams says 65 streams, a channel has at most 64") !=
      std::string::npos);

  // A stream count beyond the bytes that follow.
  auto inflated = body_of(ctl::encode(sample_report()));
  // (The report ends with the streams.)
  const std::size_t streams_count_at = inflated.size() - 2 * (4 + 8 + 4 + 4 + 4) - 4;
  put_u32(inflated, streams_count_at, 1000);
  BOOST_TEST(decode_error(inflated).find("send.streams says 1000 items, but only 48 bytes follow") !=
             std::string::npos);

  // A wake-up lateness or GPU wait below 0 is no figure.
  auto early_wake = sample_report();
  early_wake.events[0].wake_late_ns = -1;
  BOOST_TEST(decode_error(body_of(ctl::encode(early_wake)))
                     .find("event waited 1234 ns for the GPU and woke -1 ns late, expected >= 0") != std::string::npos,
             decode_error(body_of(ctl::encode(early_wake))));

  auto negative_stream = sample_report();
  negative_stream.sends[0].streams[0].stream = -2;
  BOOST_TEST(decode_error(body_of(ctl::encode(negative_stream))).find("stream.index is -2, expected >= 0") !=
             std::string::npos);
}

namespace {

ctl::PrefillAssign sample_prefill_assign() {
  ctl::PrefillAssign m;
  m.worker = 5;
  m.gpu_lease = "/run/wanlab/t/harness/control/gpu-5.lease";
  m.sink = 2;
  m.sink_ipv4 = 0x0a4d0301;
  m.sink_port = 49000;
  m.streams = 8;
  m.chunk_size = 16384;
  m.not_sent_lowat = 16384;
  m.gated = true;
  m.piece_bytes = 131072;
  m.max_kv_bytes = 268435456;
  m.intra_host_bps = 36'000'000'000;
  m.step_ns = 5'000'000;
  return m;
}

ctl::PrefillTask sample_task() {
  return ctl::PrefillTask{12, 2,    1'000'000'000'777, 1'000'040'000'777, 1'002'500'000'000, 35'000'000, 40,
                          80, 4096, 1u << 26};
}

}  // namespace

BOOST_AUTO_TEST_CASE(bubbletea_messages_round_trip) {
  const auto assign = std::get<ctl::PrefillAssign>(round_trip(sample_prefill_assign()));
  BOOST_TEST(assign.worker == 5);
  BOOST_TEST(assign.gpu_lease == sample_prefill_assign().gpu_lease);
  BOOST_TEST(assign.sink == 2);
  BOOST_TEST(assign.sink_ipv4 == 0x0a4d0301u);
  BOOST_TEST(assign.sink_port == 49000);
  BOOST_TEST(assign.streams == 8);
  BOOST_TEST(assign.chunk_size == 16384u);
  BOOST_TEST(assign.not_sent_lowat == 16384u);
  BOOST_TEST(assign.gated);
  BOOST_TEST(assign.piece_bytes == 131072u);
  BOOST_TEST(assign.max_kv_bytes == 268435456u);
  BOOST_TEST(assign.intra_host_bps == 36'000'000'000u);
  BOOST_TEST(assign.step_ns == 5'000'000u);

  const auto task = std::get<ctl::PrefillTask>(round_trip(sample_task()));
  BOOST_TEST(task.batch == 12);
  BOOST_TEST(task.chunk == 2);
  BOOST_TEST(task.start_ns == 1'000'000'000'777);
  BOOST_TEST(task.end_by_ns == 1'000'040'000'777);
  BOOST_TEST(task.give_up_ns == 1'002'500'000'000);
  BOOST_TEST(task.duration_ns == 35'000'000u);
  BOOST_TEST(task.first_layer == 40);
  BOOST_TEST(task.end_layer == 80);
  BOOST_TEST(task.tokens == 4096);
  BOOST_TEST(task.kv_bytes == 1u << 26);

  const auto sink = std::get<ctl::SinkAssign>(round_trip(ctl::SinkAssign{0x0a4d0301, 49000, 16384, 1ull << 33, 6}));
  BOOST_TEST(sink.port == 49000);
  BOOST_TEST(sink.max_message_bytes == 1ull << 33);
  BOOST_TEST(sink.senders == 6);
  const auto hello = std::get<ctl::PrefillHello>(round_trip(ctl::PrefillHello{7, 1}));
  BOOST_TEST(hello.worker == 7);
  BOOST_TEST(hello.pid == 1);
  const auto sink_hello = std::get<ctl::SinkHello>(round_trip(ctl::SinkHello{2, 42}));
  BOOST_TEST(sink_hello.sink == 2);
  BOOST_TEST(sink_hello.pid == 42);
  const auto done = std::get<ctl::PrefillDone>(round_trip(ctl::PrefillDone{3, 1, 100, 250, 20, 35}));
  BOOST_TEST(done.chunk == 1);
  BOOST_TEST(done.end_ns == 250);
  BOOST_TEST(done.first_layer == 20);
  BOOST_TEST(done.end_layer == 35);
  const auto missed = std::get<ctl::PrefillMissed>(round_trip(ctl::PrefillMissed{3, 0, 100, 900}));
  BOOST_TEST(missed.busy_until_ns == 900);
  BOOST_TEST(std::get<ctl::KvGateRequest>(round_trip(ctl::KvGateRequest{4, 9})).piece == 9);
  BOOST_TEST(std::get<ctl::KvGateGrant>(round_trip(ctl::KvGateGrant{4, 10})).piece == 10);
  BOOST_TEST(std::get<ctl::KvGateRelease>(round_trip(ctl::KvGateRelease{5, 11})).batch == 5);
  const auto sent = std::get<ctl::KvSent>(round_trip(ctl::KvSent{8, 10, 20}));
  BOOST_TEST(sent.written_ns == 20);
  const auto arrived = std::get<ctl::KvArrived>(round_trip(ctl::KvArrived{8, 2, 1ull << 35, 30}));
  BOOST_TEST(arrived.worker == 2);
  BOOST_TEST(arrived.bytes == 1ull << 35);
  BOOST_TEST(arrived.at_ns == 30);
  BOOST_TEST(ctl::type_name(ctl::KvArrived{}) == "kv_arrived");
  BOOST_TEST(ctl::type_name(ctl::PrefillHello{}) == "prefill_hello");
}

BOOST_AUTO_TEST_CASE(malformed_bubbletea_messages_are_errors_that_say_why) {
  const auto assign = body_of(ctl::encode(sample_prefill_assign()));
  for (std::size_t length = 1; length < assign.size(); ++length) {
    const std::vector<std::byte> cut(assign.begin(), assign.begin() + static_cast<long>(length));
    BOOST_TEST_CONTEXT("prefill_assign cut to " << length << " bytes") {
      BOOST_TEST(decode_error(cut).find("malformed prefill_assign frame") != std::string::npos);
    }
  }
  auto backwards = sample_task();
  std::swap(backwards.first_layer, backwards.end_layer);
  BOOST_TEST(decode_error(body_of(ctl::encode(backwards))).find("layers [80, 40) are backwards") != std::string::npos);
  auto empty = sample_task();
  empty.end_layer = empty.first_layer;
  BOOST_TEST(decode_error(body_of(ctl::encode(empty))).find("empty layer range") != std::string::npos);
  auto no_step = sample_prefill_assign();
  no_step.step_ns = 0;
  BOOST_TEST(decode_error(body_of(ctl::encode(no_step))).find("step_ns is 0") != std::string::npos);
  auto too_early = sample_task();
  too_early.end_by_ns = too_early.start_ns + static_cast<std::int64_t>(too_early.duration_ns) - 1;
  BOOST_TEST(decode_error(body_of(ctl::encode(too_early)))
                 .find("the slot's end (1000035000776) before its start (1000000000777) + duration (35000000)") !=
             std::string::npos);
  BOOST_TEST(decode_error(body_of(ctl::encode(ctl::PrefillDone{1, 0, 300, 200, 0, 1})))
                 .find("ends (200) before it starts (300)") != std::string::npos);
  BOOST_TEST(
      decode_error(body_of(ctl::encode(ctl::PrefillDone{1, 0, 200, 300, 5, 5}))).find("empty layer range [5, 5)") !=
      std::string::npos);
  BOOST_TEST(decode_error(body_of(ctl::encode(ctl::KvSent{1, 300, 200}))).find("malformed kv_sent frame") !=
             std::string::npos);
  auto negative_delay = sample_report();
  negative_delay.events[0].gpu_wait_ns = -5;
  BOOST_TEST(decode_error(body_of(ctl::encode(negative_delay))).find("event waited -5 ns for the GPU") !=
             std::string::npos);
  auto negative_batch = body_of(ctl::encode(ctl::KvGateGrant{1, 2}));
  put_u32(negative_batch, 1, 0xfffffffe);
  BOOST_TEST(decode_error(negative_batch).find("malformed kv_gate_grant frame at byte 5: batch is -2") !=
             std::string::npos);
  BOOST_TEST(decode_error({std::byte{28}}).find("unknown type 28 (expected 1..27)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(clock_messages_round_trip) {
  const auto probe = std::get<ctl::ClockProbe>(round_trip(ctl::ClockProbe{3, 1'000'000'000'123}));
  BOOST_TEST(probe.sequence == 3);
  BOOST_TEST(probe.coordinator_ns == 1'000'000'000'123);
  const auto reply = std::get<ctl::ClockReply>(round_trip(ctl::ClockReply{7, 11, -5}));
  BOOST_TEST(reply.sequence == 7);
  BOOST_TEST(reply.coordinator_ns == 11);
  BOOST_TEST(reply.worker_ns == -5);
}

BOOST_AUTO_TEST_CASE(compute_done_round_trips_and_a_negative_op_is_malformed) {
  const auto done = std::get<ctl::ComputeDone>(round_trip(ctl::ComputeDone{2, 17, 123'456'789}));
  BOOST_TEST(done.iteration == 2);
  BOOST_TEST(done.op_index == 17);
  BOOST_TEST(done.end_ns == 123'456'789);
  auto negative_op = body_of(ctl::encode(ctl::ComputeDone{2, 3, 5}));
  put_u32(negative_op, 5, 0xffffffff);  // after the type byte and the iteration
  BOOST_TEST(decode_error(negative_op).find("malformed compute_done frame at byte 9: op_index is -1") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(frame_reader_reassembles_any_split) {
  std::vector<std::byte> stream;
  for (const ctl::Message& m :
       {ctl::Message(ctl::Hello{1, 2}), ctl::Message(sample_assign()), ctl::Message(ctl::Stop{})}) {
    const auto frame = ctl::encode(m);
    stream.insert(stream.end(), frame.begin(), frame.end());
  }
  ctl::FrameReader reader;
  std::vector<std::string> types;
  for (std::byte b : stream) {  // one byte at a time: the worst split
    reader.feed(std::span<const std::byte>(&b, 1));
    while (auto message = reader.next()) types.push_back(ctl::type_name(*message));
  }
  BOOST_TEST(types == (std::vector<std::string>{"hello", "assign", "stop"}), boost::test_tools::per_element());
  BOOST_TEST(reader.pending() == 0u);

  // Half a frame at the end stays pending (the caller reports it as truncated at EOF).
  const auto frame = ctl::encode(ctl::Start{3});
  reader.feed(std::span<const std::byte>(frame.data(), 3));
  BOOST_TEST(!reader.next().has_value());
  BOOST_TEST(reader.pending() == 3u);
}

BOOST_AUTO_TEST_CASE(frame_lengths_outside_the_limit_are_refused) {
  for (std::uint32_t length : {0u, ctl::kMaxFrameBytes + 1, 0xffffffffu}) {
    ctl::FrameReader reader;
    std::vector<std::byte> prefix(4);
    put_u32(prefix, 0, length);
    reader.feed(prefix);
    try {
      reader.next();
      BOOST_ERROR("length " << length << " accepted");
    } catch (const ctl::ControlError& error) {
      BOOST_TEST(std::string(error.what()).find("length " + std::to_string(length)) != std::string::npos);
    }
  }
}

// Worker-to-worker data messages: the header round-trips, including the bytes
// a same-host message stands for, and a header that both stands for bytes
// and carries some is refused.
BOOST_AUTO_TEST_CASE(data_headers_round_trip_and_modelled_messages_carry_nothing) {
  namespace rd = wanlab::harness::run_detail;
  rd::DataHeader header{7, 3, -1, 2, 41, (5ull << 32) + 17};
  const auto bytes = rd::encode_header(header);
  const auto back = rd::decode_header(bytes);
  BOOST_TEST(back.iteration == 7);
  BOOST_TEST(back.sender == 3);
  BOOST_TEST(back.microbatch == -1);
  BOOST_TEST(back.step == 2);
  BOOST_TEST(back.sender_op == 41);
  BOOST_TEST(back.modelled_bytes == (5ull << 32) + 17);

  std::vector<std::byte> with_payload(bytes.begin(), bytes.end());
  with_payload.resize(bytes.size() + 10);
  try {
    rd::decode_header(with_payload);
    BOOST_ERROR("a modelled message with a payload was accepted");
  } catch (const std::runtime_error& error) {
    BOOST_TEST(std::string(error.what()) == "data message standing for 21474836497 bytes also carries 10");
  }
}

// A KV piece's header round-trips; a bad one says what is wrong.
BOOST_AUTO_TEST_CASE(kv_headers_round_trip_and_bad_ones_are_refused) {
  namespace rd = wanlab::harness::run_detail;
  const auto bytes = rd::encode_kv_header(rd::KvHeader{3, 17, 4, 9});
  const auto back = rd::decode_kv_header(bytes);
  BOOST_TEST(back.worker == 3);
  BOOST_TEST(back.batch == 17);
  BOOST_TEST(back.piece == 4);
  BOOST_TEST(back.pieces == 9);
  BOOST_TEST(back.modelled_bytes == 0u);
  // A cache timed on its decode host: the header alone stands for its bytes (above 4 GiB too).
  const auto timed = rd::decode_kv_header(rd::encode_kv_header(rd::KvHeader{3, 17, 0, 1, 5'000'000'001}));
  BOOST_TEST(timed.modelled_bytes == 5'000'000'001u);
  const auto error_of = [](std::span<const std::byte> b) {
    try {
      rd::decode_kv_header(b);
    } catch (const std::runtime_error& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  BOOST_TEST(error_of(rd::encode_kv_header(rd::KvHeader{3, 17, 9, 9})) ==
             "KV message with a bad header (worker 3, batch 17, piece 9 of 9)");
  BOOST_TEST(error_of(std::span<const std::byte>(bytes.data(), 10)) ==
             "KV message of 10 bytes, shorter than its 28-byte header");
  std::vector<std::byte> both(rd::kKvHeaderBytes + 10);
  const auto head = rd::encode_kv_header(rd::KvHeader{3, 17, 0, 1, 4096});
  std::copy(head.begin(), head.end(), both.begin());
  BOOST_TEST(error_of(both) == "KV message standing for 4096 bytes also carries 10");
  const auto data = rd::encode_header(rd::DataHeader{1, 2, 0, -1, 3, 0});
  BOOST_TEST(error_of(data).find("KV message with bad magic") == 0u);
}
