// The machine's side of a run's emulation health (coordinator/health_probe):
// a probe that samples the CPUs (base/cpu_times.hpp) while it lives.
#include <sched.h>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include "coordinator/health_probe.hpp"

namespace rd = wanlab::harness::run_detail;

BOOST_AUTO_TEST_CASE(the_smallest_wan_delay_is_over_pairs_of_different_dcs) {
  const auto scenario = wanlab::emulator::parse_scenario(R"(name = "t"
[defaults]
delay = "40ms"
[intra_dc]
delay = "50us"
[[dc]]
name = "a"
[[dc]]
name = "b"
[[dc]]
name = "c"
[[link]]
between = ["a", "c"]
delay = "33ms"
)",
                                                         "t.toml");
  BOOST_TEST(rd::smallest_wan_delay_ns(scenario) == 33'000'000u);  // not the 50 us inside a DC
}

// Each pair's verdicts in the run: after less before; a pair new since then
// from 0; a pair without a verdict in the run left out; max as the releaser has it.
BOOST_AUTO_TEST_CASE(pair_lateness_is_each_pairs_counters_after_less_before) {
  // Counters as the releaser counts: `n` more verdicts `late_ns` late each.
  const auto count = [](wanlab::emulator::LateCounts& counts, int n, std::uint64_t late_ns) {
    for (int i = 0; i < n; ++i) counts.count(late_ns);
  };
  wanlab::emulator::ReleaserStats before, after;
  before.pairs = {{{}, "east", "west"}, {{}, "west", "east"}};
  count(before.pairs[0], 90, 5'000);
  count(before.pairs[0], 10, 50'000);
  count(before.pairs[1], 40, 9'000);
  after.pairs = {before.pairs[0], before.pairs[1], {{}, "east", "europe"}};
  count(after.pairs[0], 230, 5'000);
  count(after.pairs[0], 15, 50'000);
  count(after.pairs[0], 3, 150'000);
  count(after.pairs[0], 2, 700'000);
  count(after.pairs[2], 5, 20'000);
  const auto pairs = rd::pair_lateness(before, after);
  BOOST_TEST_REQUIRE(pairs.size() == 2u);
  const wanlab::harness::ReleaserLateness& east_west = pairs[0].late;
  BOOST_TEST(pairs[0].from + "->" + pairs[0].to == "east->west");
  BOOST_TEST(east_west.verdicts == 250u);
  BOOST_TEST(east_west.max_ns == 700'000u);
  BOOST_TEST(east_west.over.size() == wanlab::base::kLateBoundsNs.size());
  BOOST_TEST(east_west.over.at(10'000) == 20u);
  BOOST_TEST(east_west.over.at(100'000) == 5u);
  BOOST_TEST(east_west.over.at(150'000) == 2u);  // 150 us late is not later than 150 us
  BOOST_TEST(east_west.over.at(600'000) == 2u);
  BOOST_TEST(east_west.over.at(800'000) == 0u);
  BOOST_TEST(pairs[1].from + "->" + pairs[1].to == "east->europe");
  BOOST_TEST(pairs[1].late.verdicts == 5u);
  BOOST_TEST(pairs[1].late.over.at(15'000) == 5u);
  BOOST_TEST(pairs[1].late.over.at(20'000) == 0u);
}

BOOST_AUTO_TEST_CASE(the_probe_samples_this_machine_while_it_lives) {
  wanlab::emulator::TestbedState testbed;
  testbed.name = "probe-test";          // no such testbed: no releaser counters
  wanlab::emulator::Scenario scenario;  // no DCs: no WAN delay
  rd::HealthProbe probe(testbed, scenario, wanlab::harness::IdlePoll::off, std::chrono::milliseconds(100));
  // Keep a CPU busy: at least its share shows.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  while (std::chrono::steady_clock::now() < until) {
  }
  wanlab::harness::EmulationSamples samples;
  probe.finish(samples);
  BOOST_TEST(samples.cpu_busy.size() >= 3u);  // 600 ms at 100 ms, on a loaded machine
  BOOST_TEST(samples.cpus >= 1);
  for (const double busy : samples.cpu_busy) BOOST_TEST((busy >= 0.0 && busy <= 1.0), busy);
  double most = 0;
  for (const double busy : samples.cpu_busy) most = std::max(most, busy);
  BOOST_TEST(most >= 0.9 / samples.cpus, most);  // one core spinning, of cpus
  BOOST_TEST(!samples.releaser.has_value());
  BOOST_TEST(samples.cpu_interval_s == 0.1);
  BOOST_TEST(samples.smallest_wan_delay_ns == 0u);
}

BOOST_AUTO_TEST_CASE(idle_pollers_spin_during_the_probe_and_their_time_is_not_busy) {
  wanlab::emulator::TestbedState testbed;
  testbed.name = "probe-test";
  wanlab::emulator::Scenario scenario;
  rd::HealthProbe probe(testbed, scenario, wanlab::harness::IdlePoll::on, std::chrono::milliseconds(100));
  // One CPU busy for real; every other spends its idle time polling.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  while (std::chrono::steady_clock::now() < until) {
  }
  wanlab::harness::EmulationSamples samples;
  probe.finish(samples);
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  BOOST_REQUIRE(::sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  BOOST_TEST(samples.idle_pollers == CPU_COUNT(&allowed));
  BOOST_TEST_REQUIRE(samples.cpu_busy.size() >= 3u);
  for (const double busy : samples.cpu_busy) BOOST_TEST((busy >= 0.0 && busy <= 1.0), busy);
  double most = 0;
  for (const double busy : samples.cpu_busy) most = std::max(most, busy);
  BOOST_TEST_MESSAGE("busiest sample with idle pollers: " << most << " of " << samples.cpus << " CPUs");
  BOOST_TEST(most >= 0.9 / samples.cpus, most);  // the real work still shows
  BOOST_TEST(samples.idle_polled_share == 1.0);
}

BOOST_AUTO_TEST_CASE(automatic_idle_polling_pauses_while_the_cpus_are_busy) {
  wanlab::emulator::TestbedState testbed;
  testbed.name = "probe-test";
  wanlab::emulator::Scenario scenario;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  BOOST_REQUIRE(::sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  wanlab::harness::EmulationSamples samples;
  {
    rd::HealthProbe probe(testbed, scenario, wanlab::harness::IdlePoll::automatic, std::chrono::milliseconds(500));
    // Every CPU busy for real for 2 s: well over kIdlePollBusyLimit in
    // every decision, so the pollers are active at most for the first one
    // (they start active) and whatever a loaded machine delays.
    std::vector<std::thread> spinners;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (int cpu = 0; cpu < CPU_COUNT(&allowed); ++cpu)
      spinners.emplace_back([until] {
        while (std::chrono::steady_clock::now() < until) {
        }
      });
    for (std::thread& spinner : spinners) spinner.join();
    probe.finish(samples);
  }
  BOOST_TEST(samples.idle_pollers == CPU_COUNT(&allowed));
  BOOST_TEST_MESSAGE("polled share while every CPU was busy: " << samples.idle_polled_share);
  BOOST_TEST(samples.idle_polled_share > 0.0);   // active at the first decision
  BOOST_TEST(samples.idle_polled_share <= 0.4);  // of 8 decisions, at most 3
  BOOST_TEST(samples.cpu_busy.size() >= 3u);     // still a sample every 500 ms
  BOOST_TEST(samples.cpu_interval_s == 0.5);
}
