// The transfer model (tcp_model.hpp): its rules one by one, and that the
// simulator moves a transfer exactly as the model's rounds say, so that what
// bench/transfer measures against the model holds for the simulator too.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness_support.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"
#include "wanlab/harness/model/tcp_model.hpp"

using namespace wanlab::harness;
namespace em = wanlab::emulator;

namespace {

TcpPath path_of(double rate_bps, double delay_s, double window_bytes) {
  TcpPath path;
  path.rate_bps = rate_bps;
  path.delay_s = delay_s;
  path.rtt_s = 2 * delay_s;
  path.window_bytes = window_bytes;
  return path;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_window_ceiling_is_the_smaller_share_of_the_two_buffers) {
  em::HostSettings host;
  BOOST_TEST(em::stream_window_bytes(host) ==
                 std::min(em::send_buffer_window_share(4 << 20) * (4 << 20), em::kReceiveBufferWindowShare * (6 << 20)),
             boost::test_tools::tolerance(1e-12));
  host.tcp_wmem_max = 16u << 20;
  host.tcp_rmem_max = 2u << 20;
  BOOST_TEST(em::stream_window_bytes(host) == em::kReceiveBufferWindowShare * (2 << 20),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(em::stream_window_limit_bps(host, 0.1) == em::stream_window_bytes(host) * 80,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::isinf(em::stream_window_limit_bps(host, 0)));
}

BOOST_AUTO_TEST_CASE(the_send_share_follows_the_measured_sizes) {
  BOOST_TEST(em::send_buffer_window_share(419430) == 0.86, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(em::send_buffer_window_share(4 << 20) == 0.66, boost::test_tools::tolerance(1e-12));
  // Between two measured sizes, linear in log2(size): 3 MiB lies 0.585 of the way from 2 to 4 MiB.
  BOOST_TEST(em::send_buffer_window_share(3 << 20) == 0.70 - 0.04 * std::log2(1.5), boost::test_tools::tolerance(1e-9));
  // Outside them, the nearest one's.
  BOOST_TEST(em::send_buffer_window_share(16 << 10) == 0.68, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(em::send_buffer_window_share(64.0 * (1 << 20)) == 0.65, boost::test_tools::tolerance(1e-12));
}

// At scale 0.1 a run's hosts have 0.4 MiB send buffers: the simulator takes
// the buffers the hosts get, in full-size bytes, and the share of the send
// buffer the transport keeps in flight at each path's pacing rate and RTT.
BOOST_AUTO_TEST_CASE(the_link_model_takes_the_window_of_the_scaled_hosts) {
  const auto scenario = harness_test::three_dcs();
  const LinkModel model = link_model_for(scenario, 0.1);
  BOOST_TEST(model.send_buffer_bytes == std::round(0.1 * (4 << 20)) / 0.1, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(model.stream_window_bytes == em::kReceiveBufferWindowShare * std::round(0.1 * (6 << 20)) / 0.1,
             boost::test_tools::tolerance(1e-9));

  em::PairParams pair;
  pair.rate_bps = 1'000'000'000;
  pair.delay_ns = 40'000'000;
  const TcpPath path = tcp_path_for(pair, 0.08, model, 0.1, 1);
  em::ChunkWriter writer;
  writer.send_buffer_bytes = std::round(0.1 * (4 << 20));
  writer.chunk_bytes = kCrossDcChunkBytes + kChunkHeaderBytes;
  writer.room_bytes = chunk_room_bytes(writer.send_buffer_bytes);
  writer.max_pacing_bytes_per_s = path.max_pacing_bps / 8;
  writer.link_bytes_per_s = path.rate_bps / 8;
  writer.rtt_s = 0.08;
  BOOST_TEST(path.window_bytes == em::chunk_writer_send_share(writer) * writer.send_buffer_bytes,
             boost::test_tools::tolerance(1e-9));
  // Eight streams paced at an eighth of the rate each: smaller skbs, a
  // smaller share of the buffer.
  BOOST_TEST(tcp_path_for(pair, 0.08, model, 0.1, 8).window_bytes < path.window_bytes);
}

BOOST_AUTO_TEST_CASE(an_skb_holds_about_a_millisecond_of_the_pacing_rate) {
  BOOST_TEST(em::skb_segments(0) == 2);
  BOOST_TEST(em::skb_segments(30e6 * em::kPayloadShare / 8) == 2);   // 3.6 MB/s: 3.5 KB a ms
  BOOST_TEST(em::skb_segments(100e6 * em::kPayloadShare / 8) == 8);  // 12 MB/s: 11.7 KB a ms
  BOOST_TEST(em::skb_segments(1e9) == em::kMaxSkbSegments);
  BOOST_TEST(em::skb_segments(std::numeric_limits<double>::infinity()) == em::kMaxSkbSegments);
  // The payload share measured with 2- and 8-segment skbs (tcp_window.hpp).
  BOOST_TEST(em::skb_payload_share(2) == 0.767, boost::test_tools::tolerance(0.005));
  BOOST_TEST(em::skb_payload_share(8) == 0.929, boost::test_tools::tolerance(0.005));
}

// Measured on kernel 6.18 (docs/SIMULATOR.md, "Send buffer"): one paced
// stream, 16 KiB chunks, warm, 160 ms RTT; the share of the send buffer in
// flight from the transfer time (8 MiB / (time - one way) x RTT / wmem).
BOOST_AUTO_TEST_CASE(the_transports_writer_keeps_the_measured_share_of_its_send_buffer) {
  const auto share_at = [](double wmem, double link_bps) {
    em::ChunkWriter writer;
    writer.send_buffer_bytes = wmem;
    writer.chunk_bytes = kCrossDcChunkBytes + kChunkHeaderBytes;
    writer.room_bytes = chunk_room_bytes(wmem);
    writer.max_pacing_bytes_per_s = writer.link_bytes_per_s = link_bps * em::kPayloadShare / 8;
    writer.rtt_s = 0.16;
    return em::chunk_writer_send_share(writer);
  };
  BOOST_TEST(share_at(409600, 30e6) == 0.746, boost::test_tools::tolerance(0.03));
  BOOST_TEST(share_at(409600, 100e6) == 0.876, boost::test_tools::tolerance(0.03));
  BOOST_TEST(share_at(1 << 20, 100e6) == 0.933, boost::test_tools::tolerance(0.03));
  BOOST_TEST(share_at(1 << 20, 300e6) == 0.975, boost::test_tools::tolerance(0.03));
  BOOST_TEST(share_at(4 << 20, 1e9) == 0.984, boost::test_tools::tolerance(0.03));
  BOOST_TEST(em::chunk_writer_send_share(em::ChunkWriter{}) == 0);
}

BOOST_AUTO_TEST_CASE(slow_start_doubles_a_window_that_limited_the_round_up_to_the_ceiling) {
  const TcpPath path = path_of(1e9, 0.05, 100 * kSegmentBytes);
  TcpChannelState state;
  BOOST_TEST(state.cwnd_bytes == kInitialWindowBytes);
  BOOST_TEST(round_bytes(path, state, 4, 1e9) == 4 * kInitialWindowBytes);
  BOOST_TEST(round_bytes(path, state, 4, 1000) == 1000);
  after_round(path, state, 4, 4 * kInitialWindowBytes);  // window-limited: grows by what was sent
  BOOST_TEST(state.cwnd_bytes == 2 * kInitialWindowBytes);
  // The rest of a message, sent as the full round's ACKs free the window:
  // in flight stays at cwnd, so it grows by what it sent too.
  after_round(path, state, 4, 4 * 0.4 * kInitialWindowBytes);
  BOOST_TEST(state.cwnd_bytes == 2.4 * kInitialWindowBytes, boost::test_tools::tolerance(1e-12));
  // A round under half the window after a round that was not full: no growth.
  after_round(path, state, 4, 4 * 0.5 * kInitialWindowBytes);
  BOOST_TEST(state.cwnd_bytes == 2.4 * kInitialWindowBytes, boost::test_tools::tolerance(1e-12));
  // Over half of it: the kernel's cwnd < 2 x in flight test, growth, up to
  // twice what was in flight (the test fails from there on, ACK by ACK).
  after_round(path, state, 4, 4 * 1.5 * kInitialWindowBytes);
  BOOST_TEST(state.cwnd_bytes == 3.0 * kInitialWindowBytes, boost::test_tools::tolerance(1e-12));
  // Rounds the window ceiling (100 segments) stops: cwnd goes on growing
  // while under twice what is in flight, and stops at twice the ceiling.
  for (int round = 0; round < 10; ++round) after_round(path, state, 1, round_bytes(path, state, 1, 1e12));
  BOOST_TEST(state.cwnd_bytes == 200 * kSegmentBytes);
  BOOST_TEST(round_bytes(path, state, 1, 1e12) == 100 * kSegmentBytes);
}

// A stream paced below its link (SO_MAX_PACING_RATE, as wanlab train sets
// the link's rate / streams) has only rate x RTT in flight however large a
// round the model gives it, so cwnd stops at twice that. Measured on
// atlas-3dc (8 streams at 100 Mbit/s / 8, 66 ms RTT: 71 segments in flight):
// cwnd 140-220 at a message's end. Unbounded, cwnd grew to thousands, and an
// idle restart halving it once per RTO kept far more than the kernel does.
BOOST_AUTO_TEST_CASE(a_paced_stream_grows_cwnd_to_twice_its_rate_times_rtt) {
  TcpPath path = path_of(100e6, 0.033, 4e6);
  path.paced = true;
  path.max_pacing_bps = 100e6 / 8;
  const double in_flight = path.max_pacing_bps / 8 * path.rtt_s;  // 103 KB, 71 segments
  TcpChannelState state;
  for (int message = 0; message < 8; ++message) transfer_alone_s(path, 8, 1.68e6, state);
  // Twice 71 segments, and the one window after the last cwnd-limited round
  // (the kernel keeps is_cwnd_limited for it) may carry it a little past.
  BOOST_TEST(state.cwnd_bytes >= 2 * in_flight);
  BOOST_TEST(state.cwnd_bytes <= 220 * kSegmentBytes);
  const double settled = state.cwnd_bytes;
  for (int message = 0; message < 8; ++message) transfer_alone_s(path, 8, 1.68e6, state);
  BOOST_TEST(state.cwnd_bytes == settled);
  // Idle for 2 s between iterations at an RTO of about 0.27 s: back to the
  // initial window, and the next message takes its slow start again.
  after_idle(path, state, 2.0);
  BOOST_TEST(state.cwnd_bytes == kInitialWindowBytes);
}

BOOST_AUTO_TEST_CASE(paced_a_stream_sends_at_most_twice_its_window_per_rtt) {
  TcpPath path = path_of(1e9, 0.05, 1e9);
  TcpChannelState state;
  state.cwnd_bytes = state.pacing_cwnd_bytes = 100 * kSegmentBytes;
  BOOST_TEST(std::isinf(pacing_limit_bps(path, state)));
  path.paced = true;
  BOOST_TEST(pacing_limit_bps(path, state) == 2 * 100 * kSegmentBytes * 8 / 0.1, boost::test_tools::tolerance(1e-12));
  // A full window goes out over half an RTT, not at the link's rate.
  const double bytes = 4 * 100 * kSegmentBytes;
  BOOST_TEST(transfer_alone_s(path, 4, bytes, state) == 0.05 + 0.05, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(an_idle_channel_halves_its_window_per_rto_down_to_the_initial_window) {
  TcpPath path = path_of(1e9, 0.005, 1e9);  // RTO = 10 ms + 200 ms
  TcpChannelState state;
  state.cwnd_bytes = 1000 * kSegmentBytes;
  TcpChannelState shorter = state;
  after_idle(path, shorter, 0.2);  // not past one RTO
  BOOST_TEST(shorter.cwnd_bytes == 1000 * kSegmentBytes);
  after_idle(path, state, 1.0);  // 1 s: four whole RTOs passed after the first
  BOOST_TEST(state.cwnd_bytes == 1000 * kSegmentBytes / 16);
  after_idle(path, state, 100.0);
  BOOST_TEST(state.cwnd_bytes == kInitialWindowBytes);
  path.slow_start_after_idle = false;
  state.cwnd_bytes = 1000 * kSegmentBytes;
  after_idle(path, state, 100.0);
  BOOST_TEST(state.cwnd_bytes == 1000 * kSegmentBytes);
}

// A loss (the simulator's drop-tail queue): cwnd to cubic's 0.7 and slow
// start over; then cwnd follows cubic's curve back to the window before the
// loss in K = cbrt(w_max x 0.3 / 0.4) seconds of sending, and the pacing
// rate is 1.2 x cwnd / RTT instead of 2 x. A loss that hits a quarter of the
// streams cuts the channel's cwnd by a quarter of that.
BOOST_AUTO_TEST_CASE(a_loss_cuts_cwnd_to_cubics_beta_and_cubic_grows_it_back) {
  TcpPath path = path_of(1e9, 0.05, 1e9);
  path.paced = true;
  TcpChannelState quarter;
  quarter.cwnd_bytes = 100 * kSegmentBytes;
  after_loss(quarter, 0.25);
  BOOST_TEST(quarter.cwnd_bytes == (1 - 0.3 / 4) * 100 * kSegmentBytes, boost::test_tools::tolerance(1e-9));
  TcpChannelState state;
  state.cwnd_bytes = state.pacing_cwnd_bytes = 100 * kSegmentBytes;
  after_loss(state);
  BOOST_TEST(state.cwnd_bytes == 70 * kSegmentBytes, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(pacing_limit_bps(path, state) == 1.2 * 70 * kSegmentBytes * 8 / 0.1, boost::test_tools::tolerance(1e-9));
  const double k = std::cbrt(100 * 0.3 / 0.4);  // 4.2 s: 42 rounds of 0.1 s
  double before = state.cwnd_bytes;
  for (int round = 0; round < 20; ++round) {  // cwnd-limited rounds: growth, slower and slower
    after_round(path, state, 1, state.cwnd_bytes);
    BOOST_TEST(state.cwnd_bytes >= before);
    BOOST_TEST(state.cwnd_bytes < 100 * kSegmentBytes);
    before = state.cwnd_bytes;
  }
  while (state.avoidance_s < k) after_round(path, state, 1, state.cwnd_bytes);
  BOOST_TEST(state.cwnd_bytes >= 99 * kSegmentBytes);
  BOOST_TEST(state.cwnd_bytes <= 101 * kSegmentBytes);
  // An idle restart keeps ssthresh at 3/4 of the cwnd before it
  // (tcp_current_ssthresh): slow start after it stops there.
  state.ssthresh_bytes = 10 * kSegmentBytes;
  const double cwnd = state.cwnd_bytes;
  after_idle(path, state, 10.0);
  BOOST_TEST(state.ssthresh_bytes == 0.75 * cwnd, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(state.cwnd_bytes == kInitialWindowBytes);
}

// The transport hands 16 KiB chunks to the streams as they take them: the
// most loaded stream carries ceil(chunks / streams) of them.
BOOST_AUTO_TEST_CASE(a_message_of_few_chunks_keeps_fewer_streams_busy) {
  const double chunk = kCrossDcChunkBytes;
  BOOST_TEST(effective_streams(168e3, 8) == 168e3 / (2 * chunk),
             boost::test_tools::tolerance(1e-12));  // 11 chunks: 2 on some
  BOOST_TEST(effective_streams(8 * chunk, 8) == 8.0);
  BOOST_TEST(effective_streams(chunk / 2, 8) == 1.0);
  BOOST_TEST(effective_streams(1e9, 8) == 1e9 / (std::ceil(std::ceil(1e9 / chunk) / 8) * chunk),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(effective_streams(1e9, 1) == 1.0);
  // Paced at rate / 8 per stream (as the harness does), 168 KB at 10 Mbit/s
  // and 33 ms, warm: as 5.25 streams at 1.25 Mbit/s each. Measured 0.229 s.
  TcpPath path = path_of(10e6, 0.033, 1e9);
  path.paced = true;
  path.max_pacing_bps = 10e6 / 8;
  TcpChannelState warm;
  warm.cwnd_bytes = warm.pacing_cwnd_bytes = 100 * kSegmentBytes;
  BOOST_TEST(transfer_alone_s(path, effective_streams(168e3, 8), 168e3, warm) == 2 * chunk * 8 / 1.25e6 + 0.033,
             boost::test_tools::tolerance(1e-9));
}

// Measured (tcpi_rto at 150 ms one way): 904 ms after the handshake, 588 ms
// after a 1 MB message's seven rounds.
BOOST_AUTO_TEST_CASE(the_rto_starts_at_three_rtts_and_falls_toward_rtt_plus_200ms_round_by_round) {
  const TcpPath path = path_of(1e9, 0.15, 1e9);
  TcpChannelState state;
  BOOST_TEST(rto_s(path, state) == 0.9, boost::test_tools::tolerance(1e-12));
  after_round(path, state, 1, kInitialWindowBytes);  // the first round's ACKs end the handshake's window
  BOOST_TEST(rto_s(path, state) == 0.9, boost::test_tools::tolerance(1e-12));
  for (int round = 0; round < 6; ++round) after_round(path, state, 1, state.cwnd_bytes);
  BOOST_TEST(rto_s(path, state) == 0.3 + 0.2 + 0.4 * std::pow(0.75, 6), boost::test_tools::tolerance(1e-12));
  for (int round = 0; round < 100; ++round) after_round(path, state, 1, state.cwnd_bytes);
  BOOST_TEST(rto_s(path, state) == 0.5, boost::test_tools::tolerance(1e-9));
  // Short paths start at RTT + 200 ms (rttvar never below TCP_RTO_MIN).
  BOOST_TEST(rto_s(path_of(1e9, 0.005, 1e9), TcpChannelState{}) == 0.21, boost::test_tools::tolerance(1e-12));
}

// The kernel sets the pacing rate on ACKs: an idle restart halves cwnd but
// leaves the rate the old cwnd gave.
BOOST_AUTO_TEST_CASE(after_an_idle_restart_the_pacing_rate_is_still_the_old_windows) {
  TcpPath path = path_of(1e9, 0.005, 1e9);
  path.paced = true;
  TcpChannelState state;
  state.cwnd_bytes = state.pacing_cwnd_bytes = 1000 * kSegmentBytes;
  const double before = pacing_limit_bps(path, state);
  after_idle(path, state, 1.0);
  BOOST_TEST(state.cwnd_bytes < 1000 * kSegmentBytes);
  BOOST_TEST(pacing_limit_bps(path, state) == before);
  after_round(path, state, 1, state.cwnd_bytes);
  BOOST_TEST(pacing_limit_bps(path, state) < before);
}

// A segment of the peer's (its data the other way on the same connections)
// makes the kernel set the pacing rate again, from the restarted cwnd and an
// srtt that still holds the queue before the idle time, at 1.2 x once cwnd
// is at half of ssthresh or more. Measured with `ss` on atlas-3dc with
// temporal sharing off: cwnd 73 -> 36 segments, ssthresh 60, srtt 127.6 ms,
// pacing rate 8.0 -> 3.9 Mbit/s before any of the new round was acknowledged.
BOOST_AUTO_TEST_CASE(a_peers_segment_paces_the_restarted_window_at_the_srtt_before_the_idle_time) {
  TcpPath path = path_of(100e6, 0.033, 4e6);
  path.paced = true;
  path.max_pacing_bps = 100e6 / 8;
  TcpChannelState state;
  state.cwnd_bytes = 73 * kSegmentBytes;
  state.ssthresh_bytes = 60 * kSegmentBytes;
  after_round(path, state, 1, 1, 0.0616);  // its last bytes behind 61.6 ms of queues
  BOOST_TEST(state.srtt_s == 0.1276, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(rto_s(path, state) == 0.1276 + 0.2, boost::test_tools::tolerance(1e-12));  // srtt + rttvar
  const double before = pacing_limit_bps(path, state);
  BOOST_TEST(before == 1.2 * 73 * kSegmentBytes * 8 / 0.1276, boost::test_tools::tolerance(1e-9));
  after_idle(path, state, 0.45);  // one RTO of 0.33 s: cwnd halves once
  BOOST_TEST(state.cwnd_bytes == 36.5 * kSegmentBytes, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(pacing_limit_bps(path, state) == before);  // nothing has come in yet
  on_peer_segment(state);
  BOOST_TEST(pacing_limit_bps(path, state) == 1.2 * 36.5 * kSegmentBytes * 8 / 0.1276,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(pacing_limit_bps(path, state) / 1e6 == 3.98, boost::test_tools::tolerance(0.01));
  // Under half of ssthresh (two RTOs idle: cwnd a quarter) the rate is 2 x.
  state.cwnd_bytes = 73 * kSegmentBytes;
  after_idle(path, state, 0.8);
  on_peer_segment(state);
  BOOST_TEST(state.cwnd_bytes == 18.25 * kSegmentBytes, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(pacing_limit_bps(path, state) == 2 * 18.25 * kSegmentBytes * 8 / 0.1276,
             boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(a_lone_transfer_takes_rounds_then_its_last_burst_and_one_delay) {
  // 600 segments on one stream, 50 ms one way: 10, 20, 40, 80, 160 go in
  // five rounds (310), the remaining 290 in the sixth, which grows the
  // window to 320 + 290.
  const TcpPath path = path_of(1e9, 0.05, 1e9);
  TcpChannelState state;
  const double bytes = 600 * kSegmentBytes;
  const double last = 290 * kSegmentBytes * 8 / 1e9;
  BOOST_TEST(transfer_alone_s(path, 1, bytes, state) == 5 * 0.1 + last + 0.05, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(state.cwnd_bytes == 610 * kSegmentBytes, boost::test_tools::tolerance(1e-12));
  // Warm: the window is open, the same message is one burst at the link's rate.
  BOOST_TEST(transfer_alone_s(path, 1, bytes, state) == bytes * 8 / 1e9 + 0.05, boost::test_tools::tolerance(1e-9));
  // At the window ceiling, a long transfer moves at window / RTT.
  const TcpPath narrow = path_of(1e9, 0.05, 1e6);
  TcpChannelState open;
  open.cwnd_bytes = 1e6;
  BOOST_TEST(transfer_alone_s(narrow, 2, 20e6, open) == 9 * 0.1 + 2e6 * 8 / 1e9 + 0.05,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(steady_transfer_s(narrow, 2, 20e6) == 20e6 * 8 / 160e6 + 0.05, boost::test_tools::tolerance(1e-9));
}

// 1F1B over a and b: one channel per direction, each message alone on its
// link and sent after the one before it is acknowledged (compute of 300 and
// 600 ms against a 20 ms round trip and cold transfers of about 120 ms; back
// to back they would share rounds: harness_simulate.cpp), so every simulated transfer takes exactly what
// transfer_alone_s says from the channel's state after the one before it
// and the idle gap between.
BOOST_AUTO_TEST_CASE(the_simulator_moves_each_transfer_as_the_model_says) {
  const auto scenario = harness_test::three_dcs();
  const Plan plan = make_plan(
      harness_test::experiment("schedule = \"1f1b\"\nplacement = [\"a\", \"b\"]\nstreams = 4", 2, 1, 4, 300, 600),
      scenario);
  const LinkModel model = link_model_for(scenario, plan.experiment.scale);
  BOOST_TEST(model.tcp_dynamics);
  const RunRecord record = simulate(plan, scenario, model, 3);
  BOOST_TEST(plan.experiment.pacing);  // the default, as in real runs
  const TcpPath path =
      tcp_path_for(scenario.pair(0, 1), static_cast<double>(scenario.rtt_ns(0, 1)) / 1e9, model, 1.0, 4);
  BOOST_TEST(path.paced);
  BOOST_TEST(path.rate_bps == static_cast<double>(scenario.pair(0, 1).rate_bps) * em::kPayloadShare);
  BOOST_TEST(path.max_pacing_bps == path.rate_bps / 4);
  // The transport's writer keeps most of the 4 MiB send buffer in flight
  // (the_transports_writer_keeps_the_measured_share_of_its_send_buffer).
  BOOST_TEST(path.window_bytes > 0.9 * (4 << 20));
  BOOST_TEST(path.window_bytes < em::receive_window_bytes(scenario.host));
  int checked = 0;
  for (int sender = 0; sender < 2; ++sender) {
    TcpChannelState state;
    double last_sent_s = -1;
    for (const TransferRecord& t : record.transfers) {
      if (t.worker != sender) continue;
      const double first_sent_s = static_cast<double>(t.first_sent_ns) / 1e9;
      if (last_sent_s >= 0) {
        BOOST_TEST(first_sent_s - last_sent_s > path.rtt_s);
        after_idle(path, state, first_sent_s - last_sent_s);
      }
      const double bytes = static_cast<double>(t.bytes);
      const double modelled = transfer_alone_s(path, effective_streams(bytes, 4), bytes, state);
      BOOST_TEST(static_cast<double>(t.last_received_ns - t.first_sent_ns) / 1e9 == modelled,
                 boost::test_tools::tolerance(1e-6));
      last_sent_s = static_cast<double>(t.last_sent_ns) / 1e9;
      ++checked;
    }
  }
  BOOST_TEST(checked == 3 * 2 * 4);
}
