// The simulator follows the WAN over time as the emulator applies it
// (emulator::pair_at): an [[event]] or a schedule's step changes a link's
// rate and delay for what is sent from then on, and the experiment's
// wan_start says where in that timeline the run starts.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "harness_support.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace hs = wanlab::harness;
namespace em = wanlab::emulator;

namespace {

// The three-DC scenario of the harness tests (a-b: 1 Gbit/s, 10 ms one
// way) whose a <-> b pair drops to 100 Mbit/s and 30 ms at 0.3 s.
const std::string kChangingWan = std::string(harness_test::kThreeDcScenario) + R"([[event]]
at = "300ms"
between = ["a", "b"]
rate = "100mbit"
delay = "30ms"
)";

constexpr double kChangeNs = 300e6;

struct Run {
  em::Scenario scenario = em::parse_scenario(kChangingWan, "t3.toml");
  hs::RunRecord record;
};

Run simulate(const std::string& wan_start) {
  Run run;
  hs::Experiment experiment = harness_test::experiment(
      "schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\nstreams = 1\npacing = false\n" + wan_start, 2, 1, 2, 5, 10);
  experiment.iterations = 6;
  const hs::Plan plan = hs::make_plan(experiment, run.scenario);
  run.record = hs::simulate(plan, run.scenario, harness_test::steady_links(run.scenario), experiment.iterations);
  return run;
}

// A transfer's time, first byte sent to last received, at `rate_bps` and `delay_s`.
double expected_ns(const hs::TransferRecord& transfer, double rate_bps, double delay_s) {
  return (static_cast<double>(transfer.bytes) * 8 / rate_bps + delay_s) * 1e9;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_transfer_moves_at_the_wan_in_force_when_it_is_sent) {
  const Run run = simulate("");
  int before = 0, after = 0;
  for (const hs::TransferRecord& transfer : run.record.transfers) {
    const auto took = static_cast<double>(transfer.last_received_ns - transfer.first_sent_ns);
    if (static_cast<double>(transfer.last_sent_ns) < kChangeNs) {
      BOOST_TEST(took == expected_ns(transfer, 1e9, 0.010), boost::test_tools::tolerance(1e-6));
      ++before;
    } else if (static_cast<double>(transfer.first_sent_ns) >= kChangeNs) {
      BOOST_TEST(took == expected_ns(transfer, 100e6, 0.030), boost::test_tools::tolerance(1e-6));
      ++after;
    }
  }
  BOOST_TEST(before > 0);
  BOOST_TEST(after > 0);
  // The iterations after the change are longer, and then all alike.
  const auto iteration_ns = [&](std::size_t i) {
    return static_cast<double>(run.record.iteration_end_ns[i] - run.record.iteration_start_ns[i]);
  };
  BOOST_TEST(iteration_ns(5) > 2 * iteration_ns(0));
  BOOST_TEST(iteration_ns(5) == iteration_ns(4), boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(wan_start_begins_the_run_later_in_the_timeline) {
  const Run late = simulate("wan_start = \"300ms\"");
  const Run from_zero = simulate("");
  for (const hs::TransferRecord& transfer : late.record.transfers)
    BOOST_TEST(
        static_cast<double>(transfer.last_received_ns - transfer.first_sent_ns) == expected_ns(transfer, 100e6, 0.030),
        boost::test_tools::tolerance(1e-6));
  // Its every iteration is the steady one of the run that reaches the change.
  const auto& ends = from_zero.record.iteration_end_ns;
  const auto& starts = from_zero.record.iteration_start_ns;
  BOOST_TEST(late.record.iteration_end_ns[0] - late.record.iteration_start_ns[0] == ends[5] - starts[5]);
}
