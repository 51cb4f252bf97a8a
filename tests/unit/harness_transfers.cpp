// Transfer records: the simulator's own (one per cross-DC message, times that
// follow the link model), per-link percentiles measured beside simulated, and
// how results.json and trace.json carry them.
#include <boost/test/unit_test.hpp>

#include <map>
#include <tuple>

#include "harness_support.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/record/results.hpp"
#include "wanlab/harness/report/trace.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;
using harness_test::JsonValue;
using harness_test::parse_json;

namespace {

// 1F1B over a and b (10 ms one way, 1 Gbit/s, no window limit): 2 MiB
// activations, one pair of workers per direction, so every transfer is alone
// on its channel and link.
struct TwoStageRun {
  wanlab::emulator::Scenario scenario = harness_test::three_dcs();
  Plan plan;
  RunRecord record;
};

TwoStageRun two_stage_run(int iterations,
                          LinkModel (*model)(const wanlab::emulator::Scenario&) = harness_test::steady_links) {
  TwoStageRun run;
  run.plan = make_plan(
      harness_test::experiment("schedule = \"1f1b\"\nplacement = [\"a\", \"b\"]\nstreams = 1", 2, 1, 4), run.scenario);
  run.record = simulate(run.plan, run.scenario, model(run.scenario), iterations);
  return run;
}

constexpr std::int64_t kDelayNs = 10'000'000;
// 2 MiB at 1 Gbit/s, plus the delay.
constexpr double kAloneS = (2.0 * 1024 * 1024 * 8 / 1e9) + 0.010;

const Event& send_event_of(const RunRecord& record, const TransferRecord& t) {
  for (const Event& e : record.events)
    if (e.worker == t.worker && e.iteration == t.iteration && e.op_index == t.op_index) return e;
  throw std::runtime_error("no event for the transfer");
}

// A real run's record: the simulated run relabelled, with hand-made measured
// transfers on a->b: iteration 0 one of 5 s (left out like the means'
// first iteration), iteration 1 101 of 0, 1, ..., 100 ms. Stream 0 has
// retransmitted 50 segments by the first counted message's start and one
// more by each next one's; stream 2 none since then.
RunRecord measured_record(const TwoStageRun& run) {
  RunRecord record = run.record;
  record.runtime = "sandbox";
  record.simulated_transfers = run.record.transfers;
  record.transfers.clear();
  auto add = [&](int iteration, int op, std::int64_t took_ns) {
    TransferRecord t;
    t.worker = 0;
    t.peer = 1;
    t.iteration = iteration;
    t.op_index = op;
    t.queued_ns = 1'000'000;
    t.first_sent_ns = 3'000'000;
    t.last_sent_ns = t.first_sent_ns + took_ns / 2;
    t.first_received_ns = t.first_sent_ns + took_ns / 4;
    t.last_received_ns = t.first_sent_ns + took_ns;
    const auto retransmitted = static_cast<std::uint32_t>(iteration == 0 ? 0 : 50 + (op - 1000));
    t.streams = {StreamAtStart{0, 1000, 10, 20'000, retransmitted}, StreamAtStart{2, 24, 14, 20'500, 7}};
    record.transfers.push_back(t);
  };
  add(0, 1, 5'000'000'000);
  for (int ms = 0; ms <= 100; ++ms) add(1, 1000 + ms, std::int64_t{ms} * 1'000'000);
  return record;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_simulator_records_every_cross_dc_message_as_its_link_model_moves_it) {
  const TwoStageRun run = two_stage_run(2);
  std::map<std::tuple<int, int, int>, int> records;
  for (const TransferRecord& t : run.record.transfers) ++records[{t.iteration, t.worker, t.op_index}];
  int sends = 0;
  for (const Event& e : run.record.events) {
    if (e.kind != OpKind::send || !e.cross_dc) continue;
    ++sends;
    const int recorded = records[{e.iteration, e.worker, e.op_index}];
    BOOST_TEST(recorded == 1);
  }
  BOOST_TEST(sends == 2 * 2 * 4);  // 2 iterations x 2 directions x 4 microbatches
  BOOST_TEST(run.record.transfers.size() == static_cast<std::size_t>(sends));
  for (const TransferRecord& t : run.record.transfers) {
    const Event& send = send_event_of(run.record, t);
    BOOST_TEST(t.peer == send.peer);
    BOOST_TEST(t.bytes == 2u * 1024 * 1024);
    BOOST_TEST(t.queued_ns == send.start_ns);
    BOOST_TEST(t.queued_ns <= t.first_sent_ns);
    BOOST_TEST(t.first_sent_ns <= t.last_sent_ns);
    BOOST_TEST(t.first_received_ns == t.first_sent_ns + kDelayNs);
    BOOST_TEST(t.last_received_ns == t.last_sent_ns + kDelayNs);
    BOOST_TEST(t.last_received_ns == send.end_ns);
    BOOST_TEST(static_cast<double>(t.last_received_ns - t.first_sent_ns) / 1e9 == kAloneS,
               boost::test_tools::tolerance(1e-6));
    BOOST_TEST(t.streams.empty());
  }
}

BOOST_AUTO_TEST_CASE(percentiles_per_link_skip_the_first_iteration_and_put_measured_beside_simulated) {
  const TwoStageRun run = two_stage_run(2);
  const auto simulated_only = summarize_transfers(run.record);
  BOOST_REQUIRE(simulated_only.size() == 2u);
  BOOST_TEST(simulated_only[0].link == "a->b");
  BOOST_TEST(simulated_only[1].link == "b->a");
  for (const LinkTransfers& link : simulated_only) {
    BOOST_TEST(!link.measured.has_value());
    BOOST_REQUIRE(link.simulated.has_value());
    BOOST_TEST(link.simulated->transfer.messages == 4u);  // iteration 1 only
    BOOST_TEST(link.simulated->transfer.p50_s == kAloneS, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(link.simulated->transfer.p99_s == kAloneS, boost::test_tools::tolerance(1e-6));
  }

  const auto both = summarize_transfers(measured_record(run));
  BOOST_REQUIRE(both.size() == 2u);
  const LinkTransfers& ab = both[0];
  BOOST_REQUIRE(ab.measured.has_value());
  BOOST_TEST(ab.measured->transfer.messages == 101u);
  // Linear interpolation between ranks over 0..100 ms: exact.
  BOOST_TEST(ab.measured->transfer.p50_s == 0.050, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(ab.measured->transfer.p90_s == 0.090, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(ab.measured->transfer.p99_s == 0.099, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(ab.measured->wait.p50_s == 0.002, boost::test_tools::tolerance(1e-9));
  // From the first counted message's start to the last's: 150 - 50 on stream 0.
  BOOST_REQUIRE(ab.measured->retransmitted_segments.has_value());
  BOOST_TEST(*ab.measured->retransmitted_segments == 100u);
  BOOST_REQUIRE(ab.simulated.has_value());
  BOOST_TEST(!ab.simulated->retransmitted_segments.has_value());
  BOOST_TEST(ab.simulated->transfer.p90_s == kAloneS, boost::test_tools::tolerance(1e-6));
  // b->a: simulated, never measured.
  BOOST_TEST(!both[1].measured.has_value());
  BOOST_TEST(both[1].simulated.has_value());
}

BOOST_AUTO_TEST_CASE(results_json_has_transfer_percentiles_per_link) {
  const TwoStageRun run = two_stage_run(2);
  const JsonValue simulated = parse_json(results_json(run.record, harness_test::kThreeDcScenario));
  BOOST_REQUIRE(simulated.has("transfers"));
  const JsonValue& sim_ab = simulated["transfers"]["a->b"];
  BOOST_TEST(!sim_ab.has("measured"));
  BOOST_TEST(sim_ab["simulated"]["messages"].number == 4);
  BOOST_TEST(sim_ab["simulated"]["transfer_s"]["p50"].number == kAloneS, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(sim_ab["simulated"]["wait_s"].has("p99"));

  const JsonValue measured = parse_json(results_json(measured_record(run), harness_test::kThreeDcScenario));
  const JsonValue& ab = measured["transfers"]["a->b"];
  BOOST_TEST(ab["measured"]["messages"].number == 101);
  BOOST_TEST(ab["measured"]["transfer_s"]["p90"].number == 0.090, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(ab["measured"]["wait_s"]["p50"].number == 0.002, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(ab["simulated"]["transfer_s"]["p99"].number == kAloneS, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(!measured["transfers"]["b->a"].has("measured"));
}

BOOST_AUTO_TEST_CASE(trace_json_carries_each_transfer_on_its_wan_link_span) {
  const TwoStageRun run = two_stage_run(1);
  // The simulator's own: times, no streams, on every WAN send span.
  const JsonValue simulated = parse_json(trace_json(run.record));
  int spans = 0;
  for (const JsonValue& event : simulated["traceEvents"].items) {
    if (!event.has("cat") || event["cat"].text != "wan") continue;
    ++spans;
    const JsonValue& args = event["args"];
    BOOST_REQUIRE(args.has("first_sent_us"));
    BOOST_TEST(args["queued_us"].number <= args["first_sent_us"].number);
    BOOST_TEST(args["first_sent_us"].number <= args["last_sent_us"].number);
    BOOST_TEST(args["first_received_us"].number <= args["last_received_us"].number);
    // The span ends when the message had arrived: its last byte.
    BOOST_TEST(event["ts"].number + event["dur"].number == args["last_received_us"].number,
               boost::test_tools::tolerance(1e-6));
    BOOST_TEST(!args.has("streams"));
  }
  BOOST_TEST(spans == 2 * 4);

  // A real run's records: the streams, with cwnd and srtt, on the span of their send.
  RunRecord record = run.record;
  record.runtime = "sandbox";
  TransferRecord& first = record.transfers.front();
  first.streams = {StreamAtStart{3, 2u * 1024 * 1024, 42, 20'250, 17}};
  const JsonValue real = parse_json(trace_json(record));
  int with_streams = 0;
  for (const JsonValue& event : real["traceEvents"].items) {
    if (!event.has("cat") || event["cat"].text != "wan" || !event["args"].has("streams")) continue;
    ++with_streams;
    BOOST_TEST(event["args"]["op"].number == first.op_index);
    const JsonValue& stream = event["args"]["streams"][0];
    BOOST_TEST(stream["stream"].number == 3);
    BOOST_TEST(stream["bytes"].number == 2.0 * 1024 * 1024);
    BOOST_TEST(stream["cwnd"].number == 42);
    BOOST_TEST(stream["srtt_us"].number == 20'250);
    BOOST_TEST(stream["retransmitted"].number == 17);
  }
  BOOST_TEST(with_streams == 1);
}
