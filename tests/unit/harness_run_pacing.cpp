// How the coordinator paces a worker's cross-DC connections, and that a ring
// all-reduce's streams get the share the simulator gives them where several
// rings cross one link (simulate.hpp: ring_stream_pacing_bps).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/assignment.hpp"
#include "harness_support.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;
namespace em = wanlab::emulator;

namespace {

// pp 2 x dp 2, each stage's two replicas in DCs a and b: two rings cross a <-> b.
Plan dp_across(const em::Scenario& scenario, const std::string& extra = "") {
  return make_plan(harness_test::experiment("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"\n" + extra, 2, 2, 4),
                   scenario);
}

// One host per worker, in its DC (make_assignment reads only the address).
std::vector<em::Host> hosts_of(const Plan& plan) {
  std::vector<em::Host> hosts;
  for (const WorkerPlan& worker : plan.workers) {
    em::Host host;
    host.name = worker.worker.host;
    host.ipv4 = 0x0a4d0000u + static_cast<std::uint32_t>(worker.worker.id);
    hosts.push_back(host);
  }
  return hosts;
}

// The pacing (bytes/s) of worker `id`'s connections to `peer`.
std::uint64_t pacing_to(const Plan& plan, const em::Scenario& scenario, int id, int peer) {
  const auto hosts = hosts_of(plan);
  std::vector<const em::Host*> pointers;
  for (const auto& host : hosts) pointers.push_back(&host);
  const auto assign = run_detail::make_assignment(plan, scenario, pointers, id);
  for (const auto& address : assign.peers)
    if (address.worker == peer) return address.pacing_rate;
  BOOST_FAIL("worker " << id << " has no channel to " << peer);
  return 0;
}

// The scenario's payload capacity from DC src to dst at scale 1.
double capacity_bps(const em::Scenario& scenario, int src, int dst) {
  const double rtt_s = static_cast<double>(scenario.rtt_ns(src, dst)) / 1e9;
  return tcp_path_for(scenario.pair(src, dst), rtt_s, link_model_for(scenario, 1.0), 1.0, 1).rate_bps;
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_rings_across_a_link_are_each_paced_at_half_of_it) {
  const auto scenario = harness_test::three_dcs();
  const Plan plan = dp_across(scenario);
  const int a = plan.workers[static_cast<std::size_t>(plan.worker_id(0, 0))].worker.dc;
  const int b = plan.workers[static_cast<std::size_t>(plan.worker_id(0, 1))].worker.dc;
  BOOST_REQUIRE(a != b);
  BOOST_TEST(ring_flows_between(plan, a, b) == 2);
  BOOST_TEST(ring_flows_between(plan, b, a) == 2);
  BOOST_TEST(ring_flows_between(plan, a, a) == 0);
  const double half = capacity_bps(scenario, a, b) / 2;
  BOOST_TEST(ring_stream_pacing_bps(plan, scenario, link_model_for(scenario, 1.0), a, b) == half);
  // The coordinator paces the ring neighbour at that share, the pipeline
  // neighbour (inside the DC) not at all.
  const int me = plan.worker_id(0, 0);
  BOOST_TEST(pacing_to(plan, scenario, me, plan.worker_id(0, 1)) == static_cast<std::uint64_t>(half / 8));
  BOOST_TEST(pacing_to(plan, scenario, me, plan.worker_id(1, 0)) == 0u);
}

BOOST_AUTO_TEST_CASE(rings_whose_windows_fit_the_link_together_keep_the_link_rate) {
  // a-b at 150 ms one way: a stream's window carries a fraction of 1 Gbit/s,
  // two rings' windows together less than the link.
  std::string text = harness_test::kThreeDcScenario;
  const std::string ten = "delay = \"10ms\"";
  text.replace(text.find(ten), ten.size(), "delay = \"150ms\"");
  const auto scenario = em::parse_scenario(text, "t3.toml");
  const Plan plan = dp_across(scenario);
  const int a = plan.workers[static_cast<std::size_t>(plan.worker_id(0, 0))].worker.dc;
  const int b = plan.workers[static_cast<std::size_t>(plan.worker_id(0, 1))].worker.dc;
  BOOST_TEST(std::isinf(ring_stream_pacing_bps(plan, scenario, link_model_for(scenario, 1.0), a, b)));
  // Paced as any cross-DC stream: the link's payload rate (a frame of 1514
  // bytes carries 1448), which TCP's pacing counts, over the streams.
  const auto payload_rate_bytes = static_cast<std::uint64_t>(capacity_bps(scenario, a, b) / 8);
  BOOST_TEST(payload_rate_bytes == static_cast<std::uint64_t>(1e9 * 1448 / 1514 / 8));
  BOOST_TEST(pacing_to(plan, scenario, plan.worker_id(0, 0), plan.worker_id(0, 1)) == payload_rate_bytes);
}

BOOST_AUTO_TEST_CASE(one_ring_or_no_pacing_leaves_the_ring_unshared) {
  const auto scenario = harness_test::three_dcs();
  const LinkModel model = link_model_for(scenario, 1.0);
  const Plan one_ring =
      make_plan(harness_test::experiment("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"", 1, 2, 4), scenario);
  const int a = one_ring.workers[0].worker.dc;
  const int b = one_ring.workers[1].worker.dc;
  BOOST_TEST(ring_flows_between(one_ring, a, b) == 1);
  BOOST_TEST(std::isinf(ring_stream_pacing_bps(one_ring, scenario, model, a, b)));
  const Plan unpaced = dp_across(scenario, "pacing = false");
  BOOST_TEST(std::isinf(ring_stream_pacing_bps(unpaced, scenario, model, a, b)));
  BOOST_TEST(pacing_to(unpaced, scenario, unpaced.worker_id(0, 0), unpaced.worker_id(0, 1)) == 0u);
}

BOOST_AUTO_TEST_CASE(the_simulator_holds_a_ring_alone_on_the_link_to_its_share) {
  // Stage 1's ring starts first (its backward ends first) and runs alone
  // until stage 0's joins: paced at half, it takes longer than unpaced.
  const auto scenario = harness_test::three_dcs();
  const LinkModel model = harness_test::steady_links(scenario);
  const Plan paced = dp_across(scenario);
  const Plan unpaced = dp_across(scenario, "pacing = false");
  const double paced_ns = static_cast<double>(simulate(paced, scenario, model).iteration_end_ns.at(0));
  const double unpaced_ns = static_cast<double>(simulate(unpaced, scenario, model).iteration_end_ns.at(0));
  BOOST_TEST(paced_ns > unpaced_ns);
}

BOOST_AUTO_TEST_CASE(a_pipeline_stream_is_paced_at_the_links_payload_rate_over_the_streams) {
  const auto scenario = harness_test::three_dcs();
  const Plan plan = make_plan(
      harness_test::experiment("schedule = \"1f1b\"\nplacement = [\"a\", \"b\"]\nstreams = 8", 2, 1, 4), scenario);
  const int a = plan.workers[0].worker.dc;
  const int b = plan.workers[1].worker.dc;
  BOOST_REQUIRE(a != b);
  BOOST_TEST(pacing_to(plan, scenario, 0, 1) == static_cast<std::uint64_t>(capacity_bps(scenario, a, b) / 8 / 8));
}
