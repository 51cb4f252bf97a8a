// scale_scenario: rates, per-flow rates, byte queues and TCP buffers shrink
// with the experiment's scale; delays and time-based queues stay.
#include <boost/test/unit_test.hpp>

#include "wanlab/harness/run/run.hpp"
#include "wanlab/harness/model/link_model.hpp"

namespace em = wanlab::emulator;
using wanlab::harness::run_testbed_name;
using wanlab::harness::scale_scenario;

namespace {

const char* kScenario = R"(
name = "three-dc"
[defaults]
rate = "1gbit"
queue = "1bdp"
[intra_dc]
delay = "50us"
rate = "10gbit"
[host]
tcp_wmem_max = "4mb"
[[dc]]
name = "east"
[[dc]]
name = "west"
[[link]]
between = ["east", "west"]
delay = "33ms"
flow_rate = "100mbit"
queue = "2mb"
[[event]]
at = "5s"
between = ["east", "west"]
rate = "500mbit"
)";

}  // namespace

BOOST_AUTO_TEST_CASE(rates_and_bytes_scale_delays_do_not) {
  const em::Scenario original = em::parse_scenario(kScenario, "three-dc.toml");
  const em::Scenario scaled = scale_scenario(original, 0.1);
  const auto pair = scaled.pair(0, 1);
  BOOST_TEST(pair.rate_bps == 100'000'000u);
  BOOST_TEST(pair.flow_rate_bps == 10'000'000u);
  BOOST_TEST(pair.delay_ns == 33'000'000u);
  BOOST_TEST(static_cast<int>(pair.queue.kind) == static_cast<int>(em::QueueLimit::Kind::bytes));
  BOOST_TEST(pair.queue.value == original.pair(0, 1).queue.value * 0.1);
  BOOST_TEST(scaled.pair(0, 0).rate_bps == 1'000'000'000u);
  BOOST_TEST(scaled.pair(0, 0).delay_ns == 50'000u);
  BOOST_REQUIRE(!scaled.events.empty());
  BOOST_TEST(*scaled.events[0].link.params.rate_bps == 50'000'000u);
  BOOST_TEST(*scaled.host.tcp_wmem_max == (4u << 20) / 10);
  BOOST_TEST(*scaled.host.tcp_rmem_max == 629146u);  // the 6 MiB default x 0.1, rounded
}

// A schedule's rate column scales like every rate (the simulator scales it
// too); a pause stays a pause, shares and delays stay.
BOOST_AUTO_TEST_CASE(a_schedules_rates_scale_and_its_shares_do_not) {
  const em::Scenario original = em::parse_scenario(R"(
name = "two-dc"
[defaults]
rate = "1gbit"
delay = "10ms"
schedule = { period = "10s", steps = [{ time = "0s", rate = "200mbit" }, { time = "5s", rate = "0" }] }
[[dc]]
name = "east"
[[dc]]
name = "west"
[[link]]
from = "east"
to = "west"
schedule = { steps = [{ time = "0s", share = "30%", delay = "20ms" }] }
)",
                                                   "two-dc.toml");
  const em::Scenario scaled = scale_scenario(original, 0.1);
  const auto rated = scaled.schedule(1, 0);
  BOOST_REQUIRE(rated);
  BOOST_TEST(rated->steps[0].rate_bps == 20'000'000u);
  BOOST_TEST(rated->steps[1].rate_bps == 0u);
  BOOST_TEST(original.schedule(1, 0)->steps[0].rate_bps == 200'000'000u);  // the original's own is untouched
  BOOST_TEST(scaled.schedule(0, 1) == original.schedule(0, 1));            // a share and a delay: nothing to scale
  BOOST_TEST(scaled.schedule(0, 1)->steps[0].delay_ns == 20'000'000u);
}

BOOST_AUTO_TEST_CASE(buffers_keep_a_floor_and_scale_one_changes_nothing) {
  const em::Scenario original = em::parse_scenario(kScenario, "three-dc.toml");
  const em::Scenario tiny = scale_scenario(original, 0.001);
  BOOST_TEST(*tiny.host.tcp_wmem_max == 16u << 10);
  BOOST_TEST(*tiny.host.tcp_rmem_max == 128u << 10);
  const em::Scenario same = scale_scenario(original, 1.0);
  BOOST_TEST(same.pair(0, 1).rate_bps == original.pair(0, 1).rate_bps);
  BOOST_TEST(!same.host.tcp_rmem_max.has_value());
  BOOST_CHECK_THROW(scale_scenario(original, 0), std::invalid_argument);
  BOOST_CHECK_THROW(scale_scenario(original, -1), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(testbed_names_are_valid_scenario_names) {
  em::Scenario scenario = em::parse_scenario(kScenario, "three-dc.toml");
  const std::string name = run_testbed_name(scenario);
  BOOST_TEST(name.size() <= 12u);
  BOOST_TEST(name.rfind("three-", 0) == 0u);
  scenario.name = "ab-----";
  BOOST_TEST(run_testbed_name(scenario).rfind("ab-", 0) == 0u);
}

// A training run has one seed, the experiment's: its testbed's loss and
// jitter draws use it in place of the scenario's, at the experiment's scale.
BOOST_AUTO_TEST_CASE(a_run_seeds_its_testbed_with_the_experiments_seed) {
  const em::Scenario original = em::parse_scenario("seed = 5\n" + std::string(kScenario), "three-dc.toml");
  BOOST_TEST(original.seed == 5u);
  wanlab::harness::Experiment experiment;
  experiment.seed = 42;
  experiment.scale = 0.1;
  const em::Scenario testbed = wanlab::harness::run_scenario(experiment, original);
  BOOST_TEST(testbed.seed == 42u);
  BOOST_TEST(testbed.pair(0, 1).rate_bps == scale_scenario(original, 0.1).pair(0, 1).rate_bps);
}

// TCP's segments do not scale: a byte-sized queue keeps room for the floor
// (a run's two largest messages), never more than its full size, and a
// BDP-sized queue is left to the emulator's own floor.
BOOST_AUTO_TEST_CASE(byte_queues_keep_a_floor_up_to_their_full_size) {
  const em::Scenario original = em::parse_scenario(kScenario, "three-dc.toml");
  const double full_size = original.pair(0, 1).queue.value;  // 2 MB
  BOOST_TEST(scale_scenario(original, 0.01).pair(0, 1).queue.value == full_size * 0.01);
  BOOST_TEST(scale_scenario(original, 0.01, 300'000).pair(0, 1).queue.value == 300'000.0);
  BOOST_TEST(scale_scenario(original, 0.01, 10'000).pair(0, 1).queue.value == full_size * 0.01);  // below: scaled
  BOOST_TEST(scale_scenario(original, 0.01, 50'000'000).pair(0, 1).queue.value == full_size);     // at most full size
  const auto bdp = scale_scenario(original, 0.01, 300'000).pair(0, 0).queue;
  BOOST_TEST(static_cast<int>(bdp.kind) == static_cast<int>(original.pair(0, 0).queue.kind));
  BOOST_TEST(bdp.value == original.pair(0, 0).queue.value);
}

BOOST_AUTO_TEST_CASE(a_runs_queue_floor_is_twice_its_largest_message) {
  wanlab::harness::Plan plan;
  plan.workers.resize(2);
  wanlab::harness::Op send;
  send.kind = wanlab::harness::OpKind::send;
  send.bytes = 167'772;
  wanlab::harness::Op allreduce;
  allreduce.kind = wanlab::harness::OpKind::allreduce;
  allreduce.bytes = 9'000'000;  // a ring's bytes go in steps, not as one message
  plan.workers[0].ops = {send, allreduce};
  send.bytes = 1000;
  plan.workers[1].ops = {send};
  BOOST_TEST(wanlab::harness::queue_floor_bytes(plan) == 2u * 167'772u);
  wanlab::harness::Experiment experiment;
  experiment.scale = 0.01;
  const em::Scenario original = em::parse_scenario(kScenario, "three-dc.toml");
  BOOST_TEST(wanlab::harness::run_scenario(experiment, original, wanlab::harness::queue_floor_bytes(plan))
                 .pair(0, 1)
                 .queue.value == 2.0 * 167'772);
}
