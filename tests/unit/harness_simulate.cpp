// The simulator: schedule arithmetic with free communication (hand-worked
// numbers), transfer times, link sharing, temporal sharing, streams, the
// all-reduce, and Atlas's DC ordering against Algorithm 1's.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <tuple>

#include "harness_support.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/model/link_share.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;
using harness_test::error_of;
using harness_test::experiment;
using harness_test::three_dcs;

namespace {

constexpr double kMs = 1e6;

LinkModel free_links() {
  LinkModel model;
  model.free_communication = true;
  return model;
}

double iteration_ms(const RunRecord& record, int iteration = 0) {
  return static_cast<double>(record.iteration_end_ns.at(static_cast<std::size_t>(iteration)) -
                             record.iteration_start_ns.at(static_cast<std::size_t>(iteration))) /
         kMs;
}

double makespan_ms(const std::string& top_level, int pp, int dp, int microbatches, const LinkModel& model,
                   const std::string& gpus = "") {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment(top_level, pp, dp, microbatches, 1, 2, gpus), scenario);
  return iteration_ms(simulate(plan, scenario, model));
}

// `scenario` with queues of 20 BDP: no drop-tail loss in these tests.
wanlab::emulator::Scenario deep_queues(wanlab::emulator::Scenario scenario) {
  scenario.defaults.queue = wanlab::emulator::parse_queue("20bdp");
  for (auto& link : scenario.links) link.params.queue.reset();
  return scenario;
}

// three_dcs() with 100 Mbit/s between a and b (10 ms one way).
wanlab::emulator::Scenario a_to_b_at_100_mbit() {
  std::string toml = harness_test::kThreeDcScenario;
  const std::string ab_delay = "delay = \"10ms\"";
  toml.replace(toml.find(ab_delay), ab_delay.size(), ab_delay + "\nrate = \"100mbit\"");
  return wanlab::emulator::parse_scenario(toml, "t3.toml");
}

// 2 x 1024 x 1024 bytes at 1 Gbit/s.
constexpr double kActivationWireMs = 2.0 * 1024 * 1024 * 8 / 1e9 * 1e3;

}  // namespace

BOOST_AUTO_TEST_SUITE(free_communication)

BOOST_AUTO_TEST_CASE(one_f_one_b_p4_m8_takes_33_units_with_27_percent_bubble) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 4, 1, 8, 1, 2), scenario);
  RunRecord record = simulate(plan, scenario, free_links());
  BOOST_TEST(iteration_ms(record) == 33.0, boost::test_tools::tolerance(1e-9));
  std::vector<IterationSummary> summary = summarize(record);
  BOOST_TEST(summary.at(0).bubble_fraction == 9.0 / 33.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(std::round(summary.at(0).bubble_fraction * 1000) == 273);
  for (double utilization : summary.at(0).gpu_utilization) {
    BOOST_TEST(utilization == 24.0 / 33.0, boost::test_tools::tolerance(1e-9));
  }
}

BOOST_AUTO_TEST_CASE(one_f_one_b_p8_m32_takes_117_units) {
  BOOST_TEST(makespan_ms("schedule = \"1f1b\"", 8, 1, 32, free_links()) == 117.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(gpipe_bubble_is_p_minus_1_over_m_plus_p_minus_1) {
  auto scenario = three_dcs();
  for (auto [p, m] : {std::pair{4, 8}, std::pair{2, 3}, std::pair{8, 32}, std::pair{6, 1}}) {
    Plan plan = make_plan(experiment("schedule = \"gpipe\"", p, 1, m, 1, 2), scenario);
    std::vector<IterationSummary> summary = summarize(simulate(plan, scenario, free_links()));
    BOOST_TEST(summary.at(0).bubble_fraction == (p - 1.0) / (m + p - 1.0), boost::test_tools::tolerance(1e-9));
    BOOST_TEST(summary.at(0).time_s * 1e3 == 3.0 * (m + p - 1), boost::test_tools::tolerance(1e-9));
  }
}

BOOST_AUTO_TEST_CASE(data_parallel_replicas_do_not_change_the_arithmetic) {
  BOOST_TEST(makespan_ms("schedule = \"atlas\"", 4, 3, 8, free_links()) == 33.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(iterations_follow_each_other_and_repeat) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 4, 2, 8, 1, 2), scenario);
  RunRecord record = simulate(plan, scenario, harness_test::steady_links(scenario), 3);
  BOOST_REQUIRE(record.iteration_start_ns.size() == 3u);
  for (int i = 1; i < 3; ++i) {
    BOOST_TEST(record.iteration_start_ns[static_cast<std::size_t>(i)] ==
               record.iteration_end_ns[static_cast<std::size_t>(i - 1)]);
    BOOST_TEST(iteration_ms(record, i) == iteration_ms(record, 0), boost::test_tools::tolerance(1e-6));
  }
  std::size_t ops = 0;
  for (const WorkerPlan& worker_plan : plan.workers) ops += worker_plan.ops.size();
  BOOST_TEST(record.events.size() == 3 * ops);
  BOOST_TEST(record.runtime == "simulator");
}

// With TCP's dynamics the channels' windows carry over: the first iteration
// starts every channel from the initial window and is the slowest; later ones
// start from what the previous left (less what idle took back) and repeat.
// (Queues deep enough that nothing is lost: a loss's cwnd can make a later
// iteration the slower, as the next suite shows.)
BOOST_AUTO_TEST_CASE(tcp_windows_carry_over_so_the_first_iteration_is_the_slowest) {
  auto scenario = deep_queues(three_dcs());
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 4, 2, 8, 1, 2), scenario);
  RunRecord record = simulate(plan, scenario, link_model_for(scenario, plan.experiment.scale), 4);
  BOOST_TEST(iteration_ms(record, 0) > 1.2 * iteration_ms(record, 1));
  BOOST_TEST(iteration_ms(record, 1) >= iteration_ms(record, 2) * (1 - 1e-9));
  BOOST_TEST(iteration_ms(record, 3) == iteration_ms(record, 2), boost::test_tools::tolerance(0.03));
  // Never faster than every transfer at the link's payload rate from its
  // first byte. (Not the window's steady rate: a message under the window
  // leaves at the pacing rate, up to 2 x cwnd / RTT, faster than window / RTT.)
  LinkModel unbounded = link_model_for(scenario, plan.experiment.scale);
  unbounded.tcp_dynamics = false;
  unbounded.stream_window_bytes = 0;
  RunRecord at_link_rate = simulate(plan, scenario, unbounded, 4);
  for (int i = 0; i < 4; ++i) BOOST_TEST(iteration_ms(record, i) >= iteration_ms(at_link_rate, i) * (1 - 1e-9));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(transfers)

namespace {

// The mean time of the a -> b messages of `record`, first byte sent to last received.
double mean_transfer_s(const RunRecord& record) {
  double sum = 0;
  int count = 0;
  for (const TransferRecord& t : record.transfers) {
    if (record.plan.workers[static_cast<std::size_t>(t.worker)].worker.dc != 0) continue;
    sum += static_cast<double>(t.last_received_ns - t.first_sent_ns) / 1e9;
    ++count;
  }
  BOOST_REQUIRE(count > 0);
  return sum / count;
}

RunRecord with_queue(const std::string& queue, int dp) {
  auto scenario = three_dcs();
  scenario.defaults.queue = wanlab::emulator::parse_queue(queue);
  Plan plan = make_plan(experiment("schedule = \"1f1b\"\nplacement = [\"a\", \"b\"]", 2, dp, 8), scenario);
  return simulate(plan, scenario, link_model_for(scenario, plan.experiment.scale), 3);
}

}  // namespace

// Drop-tail loss: each replica's channel is paced at the link's rate, so one
// alone never fills a queue, and the same messages take the same time
// behind a queue of a quarter BDP as of 20. Two replicas' channels sending
// at once push twice the link's rate: behind the shallow queue they lose
// segments, wait for them to be resent and cut their windows, and take
// longer than behind the deep one, where they share the link without loss.
BOOST_AUTO_TEST_CASE(two_channels_that_overflow_a_queue_together_lose_and_take_longer) {
  BOOST_TEST(mean_transfer_s(with_queue("0.25bdp", 1)) == mean_transfer_s(with_queue("20bdp", 1)),
             boost::test_tools::tolerance(1e-12));
  const RunRecord shallow = with_queue("0.25bdp", 2), deep = with_queue("20bdp", 2);
  BOOST_TEST(mean_transfer_s(shallow) > 1.02 * mean_transfer_s(deep));
  BOOST_TEST(iteration_ms(shallow, 2) > iteration_ms(deep, 2));
}

// stage 0 in a, stage 1 in b, one microbatch: F0, activation a->b, F0, B0,
// gradient b->a, B0. Each transfer: 10 ms + 2 MiB at 1 Gbit/s.
BOOST_AUTO_TEST_CASE(one_message_takes_latency_plus_bytes_over_rate) {
  double expected = 1 + 1 + 2 + 2 + 2 * (10 + kActivationWireMs);
  BOOST_TEST(makespan_ms("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]", 2, 1, 1, LinkModel{}) == expected,
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(scale_keeps_transfer_times) {
  double full = makespan_ms("schedule = \"gpipe\"\nplacement = [\"a\", \"c\"]", 2, 1, 3, LinkModel{});
  double scaled = makespan_ms("schedule = \"gpipe\"\nplacement = [\"a\", \"c\"]\nscale = 0.01", 2, 1, 3, LinkModel{});
  BOOST_TEST(scaled == full, boost::test_tools::tolerance(1e-4));
}

BOOST_AUTO_TEST_CASE(streams_lift_a_window_limited_transfer) {
  LinkModel model;
  model.stream_window_bytes = 1024 * 1024;  // 1 MiB per 20 ms round trip: 419 Mbit/s a stream
  double one = makespan_ms("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\nstreams = 1", 2, 1, 1, model);
  double four = makespan_ms("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\nstreams = 4", 2, 1, 1, model);
  double stream_rate = 1024.0 * 1024 * 8 / 0.020;
  BOOST_TEST(one == 6 + 2 * (10 + 2.0 * 1024 * 1024 * 8 / stream_rate * 1e3), boost::test_tools::tolerance(1e-6));
  // Four streams would carry 1.68 Gbit/s; the link's 1 Gbit/s is the limit.
  BOOST_TEST(four == 6 + 2 * (10 + kActivationWireMs), boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(per_stream_ceiling_applies_only_across_dcs) {
  LinkModel model;
  model.per_stream_ceiling_bps = 100e6;
  double across = makespan_ms("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\nstreams = 2", 2, 1, 1, model);
  BOOST_TEST(across == 6 + 2 * (10 + 2.0 * 1024 * 1024 * 8 / 200e6 * 1e3), boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(intra_dc_messages_use_the_intra_dc_pair) {
  // Stages on a-0 and a-1: 50 us + 2 MiB at 10 Gbit/s each way.
  double expected = 6 + 2 * (0.05 + kActivationWireMs / 10);
  BOOST_TEST(makespan_ms("schedule = \"gpipe\"\nplacement = [\"a\", \"a\"]", 2, 1, 1, LinkModel{}) == expected,
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(workers_on_one_host_exchange_for_free) {
  auto scenario = wanlab::emulator::parse_scenario(
      "name = \"one\"\n[defaults]\ndelay = \"10ms\"\n[[dc]]\nname = \"a\"\nhosts = 1\n[[dc]]\nname = \"b\"\n",
      "one.toml");
  Plan plan = make_plan(experiment("schedule = \"1f1b\"\nplacement = [\"a\", \"a\", \"a\"]", 3, 1, 4, 1, 2), scenario);
  BOOST_TEST(iteration_ms(simulate(plan, scenario, LinkModel{})) == 3.0 * (4 + 3 - 1),
             boost::test_tools::tolerance(1e-9));
}

// dp 2, both replicas' stage 0 in a and stage 1 in b: each microbatch's two
// activations want a -> b at the same moment.
std::map<int, std::int64_t> activation_arrivals(bool temporal_sharing, std::int64_t& iteration_ns) {
  auto scenario = three_dcs();
  std::string top = std::string("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\ntemporal_sharing = ") +
                    (temporal_sharing ? "true" : "false");
  Plan plan = make_plan(experiment(top, 2, 2, 1, 1, 2), scenario);
  RunRecord record = simulate(plan, scenario, LinkModel{});
  iteration_ns = record.iteration_end_ns.at(0) - record.iteration_start_ns.at(0);
  std::map<int, std::int64_t> arrivals;  // replica -> arrival of its activation
  for (const Event& event : record.events) {
    const Worker& worker = plan.workers[static_cast<std::size_t>(event.worker)].worker;
    if (event.kind == OpKind::send && worker.stage == 0) arrivals[worker.replica] = event.end_ns;
  }
  return arrivals;
}

BOOST_AUTO_TEST_CASE(concurrent_transfers_share_a_link) {
  std::int64_t iteration_ns = 0;
  std::map<int, std::int64_t> arrivals = activation_arrivals(false, iteration_ns);
  double both = (1 + 10 + 2 * kActivationWireMs) * kMs;
  BOOST_TEST(static_cast<double>(arrivals.at(0)) == both, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(static_cast<double>(arrivals.at(1)) == both, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(temporal_sharing_sends_one_at_a_time_at_full_rate) {
  std::int64_t shared_ns = 0;
  std::int64_t staggered_ns = 0;
  activation_arrivals(false, shared_ns);
  std::map<int, std::int64_t> arrivals = activation_arrivals(true, staggered_ns);
  BOOST_TEST(static_cast<double>(arrivals.at(0)) == (1 + 10 + kActivationWireMs) * kMs,
             boost::test_tools::tolerance(1e-6));
  BOOST_TEST(static_cast<double>(arrivals.at(1)) == (1 + 10 + 2 * kActivationWireMs) * kMs,
             boost::test_tools::tolerance(1e-6));
  // Replica 0 starts its backward earlier and its gradient no longer collides
  // with replica 1's: the iteration is shorter.
  BOOST_TEST(staggered_ns < shared_ns);
}

BOOST_AUTO_TEST_CASE(ring_allreduce_across_two_dcs) {
  auto scenario = three_dcs();
  // pp 1, replica 0 in a, replica 1 in b: 2 ring steps of S/2 bytes, a -> b
  // and b -> a at the same time on their own links, 10 ms one way.
  Plan plan = make_plan(experiment("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"", 1, 2, 1, 1, 2), scenario);
  RunRecord record = simulate(plan, scenario, LinkModel{});
  double step_ms = 10 + static_cast<double>(plan.stage_param_bytes) / 2 * 8 / 1e9 * 1e3;
  BOOST_TEST(iteration_ms(record) == 3 + 2 * step_ms, boost::test_tools::tolerance(1e-6));
  int allreduces = 0;
  for (const Event& event : record.events) {
    if (event.kind != OpKind::allreduce) continue;
    ++allreduces;
    BOOST_TEST(static_cast<double>(event.end_ns - event.start_ns) / kMs == 2 * step_ms,
               boost::test_tools::tolerance(1e-6));
  }
  BOOST_TEST(allreduces == 2);
}

BOOST_AUTO_TEST_CASE(an_allreduce_on_one_host_waits_only_for_the_slowest_member) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"\nplacement = [\"a\"]", 1, 2, 1, 1, 2), scenario);
  BOOST_TEST(iteration_ms(simulate(plan, scenario, LinkModel{})) == 3.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(messages_between_two_workers_go_one_after_the_other) {
  auto scenario = three_dcs();
  // GPipe, 3 microbatches a -> b: forwards end at 1, 2, 3 ms; one channel, so
  // the activations arrive 1, 2 and 3 wire times after the first was sent.
  Plan plan = make_plan(experiment("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]", 2, 1, 3, 1, 2), scenario);
  RunRecord record = simulate(plan, scenario, LinkModel{});
  std::vector<double> arrivals;
  for (const Event& event : record.events) {
    if (event.kind == OpKind::send && event.worker == 0) arrivals.push_back(static_cast<double>(event.end_ns) / kMs);
  }
  BOOST_REQUIRE(arrivals.size() == 3u);
  for (int k = 0; k < 3; ++k) {
    BOOST_TEST(arrivals[static_cast<std::size_t>(k)] == 1 + 10 + (k + 1) * kActivationWireMs,
               boost::test_tools::tolerance(1e-6));
  }
}

// Messages queued back to back on one channel go as TCP sends them, one
// stream of bytes that the window bounds: GPipe's three 2 MiB activations
// a -> b, queued at 1, 2 and 3 ms while the first takes tens of ms, arrive
// (the last) when one 6 MiB activation sent at the first one's time does.
// Each message beginning a whole window of its own would carry more than
// window / RTT: the three would arrive sooner.
BOOST_AUTO_TEST_CASE(messages_back_to_back_move_as_one_message_of_their_bytes) {
  const auto scenario = deep_queues(three_dcs());
  const auto last_arrival_ms = [&](int microbatches, int seq_len) {
    const std::string toml =
        "name = \"x\"\ntestbed = \"t3.toml\"\nschedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\n"
        "[model]\nlayers = 64\nhidden = 1024\nseq_len = " +
        std::to_string(seq_len) + "\nmicrobatches = " + std::to_string(microbatches) +
        "\n[parallel]\npp = 2\ndp = 1\n[compute]\nforward_ms = 1\nbackward_ms = 2\n";
    const Plan plan = make_plan(parse_experiment(toml, "x.toml"), scenario);
    const RunRecord record = simulate(plan, scenario, link_model_for(scenario, plan.experiment.scale));
    std::vector<const TransferRecord*> forward;
    for (const TransferRecord& t : record.transfers)
      if (t.worker == 0) forward.push_back(&t);
    BOOST_REQUIRE(forward.size() == static_cast<std::size_t>(microbatches));
    BOOST_TEST(forward.front()->first_sent_ns == 1'000'000);
    // Each one after the first was queued before the one before it arrived.
    for (std::size_t k = 1; k < forward.size(); ++k)
      BOOST_TEST(forward[k]->queued_ns < forward[k - 1]->last_received_ns);
    return static_cast<double>(forward.back()->last_received_ns) / kMs;
  };
  const double three = last_arrival_ms(3, 1024), one = last_arrival_ms(1, 3 * 1024);
  BOOST_TEST(one > 10 + 3 * kActivationWireMs + 2 * 20);  // slow start: rounds of the 20 ms RTT
  BOOST_TEST(three == one, boost::test_tools::tolerance(0.002));
}

// A WAN link carries the ACKs of the data on its link back. Where data goes
// both ways at once (a ring all-reduce between two DCs: each member sends to
// the other), each way has its capacity less the other way's ACKs,
// kAckShareOfData of that data, so the link-bound all-reduce takes about
// 1 + kAckShareOfData times as long; data one way at a time pays nothing.
BOOST_AUTO_TEST_CASE(data_both_ways_leaves_each_way_its_capacity_less_the_acks) {
  const auto scenario = deep_queues(three_dcs());
  const auto iteration_with = [&](const std::string& top_level, int pp, int dp, double ack_share) {
    const Plan plan = make_plan(experiment(top_level, pp, dp, 1), scenario);
    LinkModel model = link_model_for(scenario, plan.experiment.scale);
    BOOST_TEST(model.ack_share == kAckShareOfData);  // the default
    model.ack_share = ack_share;
    return iteration_ms(simulate(plan, scenario, model));
  };
  const std::string across = "schedule = \"1f1b\"\nplacement = \"dp-across-dc\"";
  const double both_ways = iteration_with(across, 1, 2, kAckShareOfData);
  const double free_acks = iteration_with(across, 1, 2, 0);
  BOOST_TEST(free_acks > 5000);  // gigabytes at 1 Gbit/s: the link, not slow start, sets the time
  BOOST_TEST(both_ways > free_acks * (1 + 0.8 * kAckShareOfData));
  BOOST_TEST(both_ways < free_acks * (1 + kAckShareOfData));
  const std::string one_way = "schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]";
  BOOST_TEST(iteration_with(one_way, 2, 1, kAckShareOfData) == iteration_with(one_way, 2, 1, 0));
}

// The ACKs also wait in the link back's queue, behind the data going the
// other way: a round's ACKs are back an RTT and that wait after it began.
// Over 100 Mbit/s with 2 MiB messages and compute long enough that each
// message starts on a channel idle for more than its RTO (cwnd halved, so
// its rounds are window-bound), two replicas' channels each way, each paced
// at the link's rate, keep a queue both ways: their messages take longer
// than with ACKs that ride nothing (ack_share 0), by more than the ACKs'
// bytes cost. One channel each way keeps no queue, and pays nothing here
// (its data and the other way's do not overlap). Measured on atlas-3dc with
// temporal sharing off: srtt p50 92 ms and p90 126 ms against 66 ms of
// delay, simulated 92 and 124 (docs/SIMULATOR.md, "ACKs").
BOOST_AUTO_TEST_CASE(acks_wait_in_the_queue_of_the_data_going_the_other_way) {
  const auto scenario = deep_queues(a_to_b_at_100_mbit());
  const auto mean_with = [&](int dp, double ack_share) {
    const std::string top_level = "schedule = \"1f1b\"\nstreams = 8\nplacement = [\"a\", \"b\"]";
    const Plan plan = make_plan(experiment(top_level, 2, dp, 8, 300, 600), scenario);
    LinkModel model = link_model_for(scenario, plan.experiment.scale);
    model.ack_share = ack_share;
    model.serve_ties_in_turn = false;  // the replicas' channels overlap, each way
    return mean_transfer_s(simulate(plan, scenario, model, 3));
  };
  BOOST_TEST(mean_with(2, kAckShareOfData) > (1 + 2 * kAckShareOfData) * mean_with(2, 0));
  BOOST_TEST(mean_with(1, kAckShareOfData) == mean_with(1, 0), boost::test_tools::tolerance(1e-12));
}

// A drop-tail FIFO gives each sender its part of the link in proportion
// to what it pushes; max-min gives equal shares to all that push more than
// an equal share. Both give every sender its cap where the link has room.
BOOST_AUTO_TEST_CASE(a_fifo_shares_a_link_by_what_each_sender_pushes) {
  struct Sender {
    double cap_bps = 0;
    double rate_bps = 0;
  };
  Sender wide{200e6}, narrow{100e6}, small{10e6};
  std::vector<Sender*> senders{&wide, &narrow, &small};
  share_fifo(100e6, senders);
  BOOST_TEST(wide.rate_bps == 2 * narrow.rate_bps, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(narrow.rate_bps == 10 * small.rate_bps, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(wide.rate_bps + narrow.rate_bps + small.rate_bps == 100e6, boost::test_tools::tolerance(1e-12));
  share_max_min(100e6, senders);
  BOOST_TEST(small.rate_bps == 10e6);
  BOOST_TEST(wide.rate_bps == 45e6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(narrow.rate_bps == 45e6, boost::test_tools::tolerance(1e-12));
  share_fifo(1e9, senders);  // room for all
  BOOST_TEST(wide.rate_bps == 200e6);
  BOOST_TEST(narrow.rate_bps == 100e6);
  BOOST_TEST(small.rate_bps == 10e6);
}

// The simulator runs a job's data-parallel replicas exactly in step; real
// ones never send at one instant, and on a FIFO whichever is first keeps
// ahead. So first rounds that reach a link at one instant go a segment's
// time apart (1448 bytes at 100 Mbit/s of frames: 0.121 ms), and the lead
// grows from there: over 100 Mbit/s with 8 streams, the two copies of a
// message end up milliseconds apart. Held in step (serve_ties_in_turn off,
// as the plan's temporal-sharing slots are taken), every message's two
// copies arrive at one instant. Measured: real copies of a message left
// 0.1-0.5 ms apart and arrived up to 1.1 s apart (docs/SIMULATOR.md,
// "Replicas out of step").
BOOST_AUTO_TEST_CASE(replicas_that_send_at_one_instant_drift_apart_on_a_fifo_link) {
  const auto scenario = deep_queues(a_to_b_at_100_mbit());
  const std::string top_level = "schedule = \"1f1b\"\nstreams = 8\nplacement = [\"a\", \"b\"]";
  const Plan plan = make_plan(experiment(top_level, 2, 2, 8, 30, 60), scenario);
  // Per message of replica 0 (sender, receiver, microbatch, iteration): how
  // much later replica 1's copy left and arrived, in ms.
  const auto copies_apart = [&](bool in_turn) {
    LinkModel model = link_model_for(scenario, plan.experiment.scale);
    model.serve_ties_in_turn = in_turn;
    const RunRecord record = simulate(plan, scenario, model, 2);
    std::map<std::tuple<int, int, int, int>, std::pair<std::int64_t, std::int64_t>> first, second;
    for (const TransferRecord& transfer : record.transfers) {
      const auto key = std::tuple{transfer.worker % 2, transfer.peer % 2, transfer.microbatch, transfer.iteration};
      (transfer.worker < 2 ? first : second)[key] = {transfer.first_sent_ns, transfer.last_received_ns};
    }
    std::vector<std::pair<double, double>> apart;
    for (const auto& [key, times] : first) {
      const auto& other = second.at(key);
      apart.emplace_back((other.first - times.first) / kMs, (other.second - times.second) / kMs);
    }
    return apart;
  };
  const auto in_step = copies_apart(false);
  BOOST_TEST(in_step.size() == 2u * 2 * 8);  // 2 iterations, both ways, 8 microbatches
  for (const auto& [left, arrived] : in_step) {
    BOOST_TEST(left == 0);
    BOOST_TEST(arrived == 0);
  }
  const auto in_turn = copies_apart(true);
  const double segment_ms = 1448 * 8 / (100e6 * 1448 / 1514) * 1e3;
  BOOST_TEST(in_turn.front().first == segment_ms, boost::test_tools::tolerance(0.01));
  double most_apart = 0;
  for (const auto& [left, arrived] : in_turn) most_apart = std::max(most_apart, std::abs(arrived));
  BOOST_TEST(most_apart > 100 * segment_ms);  // 104 ms: the lead grew 850-fold
}

BOOST_AUTO_TEST_CASE(allreduce_across_the_wan_is_slower_than_inside_a_dc) {
  std::string gpus = "[gpus]\na = 8\nb = 8\n";
  double inside = makespan_ms("schedule = \"1f1b\"\nplacement = [\"a\", \"b\"]", 2, 2, 4, LinkModel{}, gpus);
  double across = makespan_ms("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"", 2, 2, 4, LinkModel{}, gpus);
  BOOST_TEST(across > inside);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(atlas)

// Algorithm 1 chains b -> c -> a (60 ms + 40 ms one way); ordering by latency
// gives b -> a -> c (10 ms + 40 ms). The simulator shows the gain.
BOOST_AUTO_TEST_CASE(ordering_dcs_by_latency_shortens_the_iteration) {
  auto scenario = three_dcs();
  std::string gpus = "[gpus]\nb = 6\nc = 4\na = 2\n";
  Plan algorithm1 = make_plan(experiment("schedule = \"atlas\"\nreorder_dcs = false", 6, 2, 8, 10, 20, gpus), scenario);
  Plan ordered = make_plan(experiment("schedule = \"atlas\"", 6, 2, 8, 10, 20, gpus), scenario);
  BOOST_TEST(algorithm1.stage_dc != ordered.stage_dc);
  double before = iteration_ms(simulate(algorithm1, scenario, link_model_for(scenario, algorithm1.experiment.scale)));
  double after = iteration_ms(simulate(ordered, scenario, link_model_for(scenario, ordered.experiment.scale)));
  BOOST_TEST_MESSAGE("Algorithm 1 order: " << before << " ms, ordered by latency: " << after << " ms");
  // The pipeline's fill and drain alone cross the chain once each way: 2 x 50 ms less.
  BOOST_TEST(after < before - 100);
}

BOOST_AUTO_TEST_CASE(every_configuration_runs_to_completion) {
  auto scenario = three_dcs();
  LinkModel model = link_model_for(scenario, 1.0);  // the test experiments run at scale 1
  model.per_stream_ceiling_bps = 300e6;
  int runs = 0;
  for (const char* schedule : {"gpipe", "1f1b", "atlas"}) {
    for (const char* placement : {"atlas", "pp-across-dc", "dp-across-dc", "[\"a\", \"c\", \"a\", \"b\"]"}) {
      for (const char* sharing : {"true", "false"}) {
        for (int microbatches : {1, 3, 8}) {
          std::string placement_value = placement[0] == '[' ? placement : std::string("\"") + placement + "\"";
          std::string top = std::string("schedule = \"") + schedule + "\"\nplacement = " + placement_value +
                            "\ntemporal_sharing = " + sharing;
          Plan plan =
              make_plan(experiment(top, 4, 3, microbatches, 3, 5, "[gpus]\na = 12\nb = 12\nc = 12\n"), scenario);
          RunRecord record = simulate(plan, scenario, model, 2);
          std::size_t ops = 0;
          for (const WorkerPlan& worker_plan : plan.workers) ops += worker_plan.ops.size();
          BOOST_TEST(record.events.size() == 2 * ops, top);
          BOOST_TEST(iteration_ms(record) >= 8.0 * (microbatches + 3), top);
          ++runs;
        }
      }
    }
  }
  BOOST_TEST(runs == 72);
}

BOOST_AUTO_TEST_CASE(a_recv_ends_when_its_message_arrives) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"atlas\"", 4, 2, 4, 1, 2, "[gpus]\na = 4\nb = 2\nc = 2\n"), scenario);
  RunRecord record = simulate(plan, scenario, link_model_for(scenario, plan.experiment.scale));
  std::map<std::tuple<int, int, int>, std::int64_t> arrival;
  for (const Event& event : record.events) {
    if (event.kind == OpKind::send) arrival[{event.worker, event.peer, event.microbatch}] = event.end_ns;
  }
  for (const Event& event : record.events) {
    if (event.kind != OpKind::recv) continue;
    std::int64_t arrived = arrival.at({event.peer, event.worker, event.microbatch});
    BOOST_TEST(event.end_ns == std::max(event.start_ns, arrived));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bounds)

// Everything the simulator holds but the events is per iteration: 30
// iterations hold no more than one, and the events are exactly one per op.
// With TCP's dynamics a transfer also ends rounds (completions), fewer once
// the windows are open: the first iteration bounds the others.
BOOST_AUTO_TEST_CASE(memory_is_bounded_by_the_plan_not_the_iterations_with_tcp_rounds) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"atlas\"\nplacement = \"pp-across-dc\"", 4, 3, 8, 1, 2), scenario);
  SimulationStats one;
  SimulationStats many;
  simulate(plan, scenario, link_model_for(scenario, plan.experiment.scale), 1, &one);
  RunRecord record = simulate(plan, scenario, link_model_for(scenario, plan.experiment.scale), 30, &many);
  PlanSize size = plan_size(plan);
  BOOST_TEST(record.events.size() == 30 * size.ops_per_iteration);
  BOOST_TEST(record.events.capacity() == record.events.size());
  BOOST_TEST(one.completions > size.steps_per_iteration / 2);
  BOOST_TEST(many.completions <= 30 * one.completions);
  BOOST_TEST(many.peak_transfers == one.peak_transfers);
  BOOST_TEST(many.peak_pending <= size.steps_per_iteration);
}

BOOST_AUTO_TEST_CASE(memory_is_bounded_by_the_plan_not_the_iterations) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"atlas\"\nplacement = \"pp-across-dc\"", 4, 3, 8, 1, 2), scenario);
  LinkModel model = harness_test::steady_links(scenario);
  SimulationStats one;
  SimulationStats many;
  simulate(plan, scenario, model, 1, &one);
  RunRecord record = simulate(plan, scenario, model, 30, &many);
  PlanSize size = plan_size(plan);
  BOOST_TEST(record.events.size() == 30 * size.ops_per_iteration);
  BOOST_TEST(record.events.capacity() == record.events.size());  // reserved, never doubled
  BOOST_TEST(one.completions > 0u);
  BOOST_TEST(one.completions <= size.steps_per_iteration);
  BOOST_TEST(many.completions == 30 * one.completions);
  BOOST_TEST(one.peak_transfers > 0u);
  BOOST_TEST(one.peak_transfers <= size.steps_per_iteration);
  BOOST_TEST(many.peak_transfers == one.peak_transfers);
  BOOST_TEST(many.peak_pending == one.peak_pending);
}

BOOST_AUTO_TEST_CASE(simulate_refuses_more_iterations_than_the_limit_allows) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 4, 1, 8), scenario);  // 160 steps per iteration
  std::string message = error_of([&] { simulate(plan, scenario, LinkModel{}, 200000); });
  BOOST_TEST(message.find("x.toml: the run is too big: iterations 200000 x 160 steps per iteration") == 0, message);
}

// 8 GB activations over a 1 bit/s link: ~2000 years, beyond int64 nanoseconds.
BOOST_AUTO_TEST_CASE(a_link_far_too_slow_is_an_error_not_a_wrapped_time) {
  auto scenario = wanlab::emulator::parse_scenario(
      "name = \"slow\"\n[defaults]\nrate = \"1bit\"\n[[dc]]\nname = \"a\"\n[[dc]]\nname = \"b\"\n"
      "[[link]]\nbetween = [\"a\", \"b\"]\ndelay = \"10ms\"\n",
      "slow.toml");
  Experiment slow = parse_experiment(
      "name = \"x\"\ntestbed = \"slow.toml\"\nschedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\n[model]\nlayers = 2\n"
      "hidden = 4096\nseq_len = 1000000\nmicrobatches = 1\n[parallel]\npp = 2\n[compute]\nforward_ms = 1\n"
      "backward_ms = 1\n[gpus]\nmemory_gb = 1000\n",  // the activations need 142 GB a GPU
      "x.toml");
  Plan plan = make_plan(slow, scenario);
  std::string message = error_of([&] { simulate(plan, scenario, LinkModel{}); });
  BOOST_TEST(message.find("x.toml: simulate: the simulated time passes 1e+18 ns (about 31 years) in iteration 0") == 0,
             message);
}

// A rate so small that a transfer's time is infinite is the same error, not a deadlock.
BOOST_AUTO_TEST_CASE(an_infinite_transfer_time_is_the_same_error) {
  auto scenario = three_dcs();
  Experiment tiny = experiment("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]", 2, 1, 1);
  tiny.scale = 1e-320;  // below what files and options accept
  Plan plan = make_plan(tiny, scenario);
  std::string message = error_of([&] { simulate(plan, scenario, LinkModel{}); });
  BOOST_TEST(message.find("x.toml: simulate: the simulated time passes") == 0, message);
}

BOOST_AUTO_TEST_SUITE_END()
