// The simulator follows the WAN over time as the emulator applies it
// (emulator::pair_at): an [[event]] or a schedule's step changes a link's
// rate and delay for what is sent from then on, and the experiment's
// wan_start says where in that timeline the run starts.
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <cmath>
#include <random>

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

namespace {

// A two-DC scenario whose one WAN link has a random schedule (1 to 4 steps
// of rate and delay, or of delay alone, or of a cross-traffic share;
// repeating or not) and 0 to 2 random [[event]]s, drawn from `seed`.
std::string random_timeline(std::mt19937& random) {
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  std::string text = harness_test::two_dcs_text("1gbit", "delay = \"10ms\"\nschedule = { steps = [");
  const int steps = pick(1, 4);
  const int columns = pick(0, 2);  // 0: rate and delay, 1: delay alone, 2: share
  int time_ms = 0;
  for (int step = 0; step < steps; ++step) {
    text += fmt::format("{}{{ time = \"{}ms\"", step == 0 ? "" : ", ", time_ms);
    if (columns == 0) text += fmt::format(", rate = \"{}mbit\", delay = \"{}ms\"", pick(100, 2000), pick(1, 60));
    if (columns == 1) text += fmt::format(", delay = \"{}ms\"", pick(1, 60));
    if (columns == 2) text += fmt::format(", share = \"{}%\"", pick(0, 80));
    text += " }";
    time_ms += pick(100, 1000);
  }
  text += "]";
  if (pick(0, 1) == 1) text += fmt::format(", period = \"{}ms\"", time_ms);
  text += " }\n";
  const int events = pick(0, 2);
  for (int event = 0; event < events; ++event)
    text += fmt::format("[[event]]\nat = \"{}ms\"\nbetween = [\"a\", \"b\"]\nrate = \"{}mbit\"\ndelay = \"{}ms\"\n",
                        pick(0, 3000), pick(100, 2000), pick(1, 60));
  return text;
}

}  // namespace

// Every transfer of a run over a WAN drawn at random, sent wholly inside one
// of the pair's settings, takes what emulator::pair_at gives at its send
// time: bytes at its rate plus its delay. Transfers during which the pair
// changes are counted, not checked. Seeds 1-40, printed with their counts.
BOOST_AUTO_TEST_CASE(random_timelines_move_every_transfer_at_pair_at) {
  int checked = 0, straddled = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 random(seed);
    const std::string scenario_text = random_timeline(random);
    const em::Scenario scenario = em::parse_scenario(scenario_text, "rt.toml");
    const int start_ms = std::uniform_int_distribution<int>(0, 2000)(random);
    hs::Experiment experiment = harness_test::experiment(
        fmt::format("schedule = \"gpipe\"\nplacement = [\"a\", \"b\"]\nstreams = 1\npacing = false\n"
                    "wan_start = \"{}ms\"",
                    start_ms),
        2, 1, std::uniform_int_distribution<int>(1, 4)(random), 5, 10, "[gpus]\na = 1\nb = 1\n");
    experiment.iterations = 4;
    const hs::Plan plan = hs::make_plan(experiment, scenario);
    // No window ceiling: a transfer goes at the pair's rate whatever its delay
    // (this checks the timeline; the window's share is the transfer grid's).
    hs::LinkModel model = harness_test::steady_links(scenario);
    model.stream_window_bytes = 0;
    model.per_stream_ceiling_bps = 0;
    const hs::RunRecord record = hs::simulate(plan, scenario, model, experiment.iterations);
    int seed_checked = 0, seed_straddled = 0;
    for (const hs::TransferRecord& transfer : record.transfers) {
      const int src = plan.workers[static_cast<std::size_t>(transfer.worker)].worker.dc;
      const int dst = plan.workers[static_cast<std::size_t>(transfer.peer)].worker.dc;
      const auto sent = static_cast<std::uint64_t>(transfer.first_sent_ns) + experiment.wan_start_ns;
      const auto last_sent = static_cast<std::uint64_t>(transfer.last_sent_ns) + experiment.wan_start_ns;
      if (em::next_pair_change_ns(scenario, src, dst, sent) <= last_sent) {
        ++seed_straddled;
        continue;
      }
      const em::PairAt pair = em::pair_at(scenario, src, dst, sent);
      BOOST_TEST_REQUIRE(!pair.paused);
      const double took = static_cast<double>(transfer.last_received_ns - transfer.first_sent_ns);
      BOOST_TEST(took == expected_ns(transfer, static_cast<double>(pair.params.rate_bps),
                                     static_cast<double>(pair.params.delay_ns) / 1e9),
                 boost::test_tools::tolerance(1e-6));
      if (std::abs(took - expected_ns(transfer, static_cast<double>(pair.params.rate_bps),
                                      static_cast<double>(pair.params.delay_ns) / 1e9)) > 1e-6 * took)
        BOOST_TEST_MESSAGE("seed " << seed << ", wan_start " << start_ms << " ms, transfer sent at "
                                   << transfer.first_sent_ns << " ns: " << scenario_text);
      ++seed_checked;
    }
    BOOST_TEST_MESSAGE("seed " << seed << ": " << seed_checked << " transfers checked, " << seed_straddled
                               << " sent across a change");
    checked += seed_checked;
    straddled += seed_straddled;
  }
  BOOST_TEST_MESSAGE("all seeds: " << checked << " transfers checked, " << straddled << " sent across a change");
  BOOST_TEST(checked > 4 * straddled);  // the draw mostly tests something
}
