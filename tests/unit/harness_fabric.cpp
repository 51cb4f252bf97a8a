// The DC fabric ([fabric], fabric.hpp): its keys and their errors, an
// all-reduce inside a DC at NIC rate (NVLink inside a server), slowed by the
// oversubscription ratio, and the limits that let 100,000 GPUs and 64 DCs
// simulate while the emulated testbed keeps its own.
#include <boost/test/unit_test.hpp>

#include <string>

#include "harness_support.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;
using harness_test::error_of;
using harness_test::three_dcs;

namespace {

// 4 layers of hidden 1024 over pp stages: stage_param_bytes = 12 x 4 x 1024^2 x 2 / pp.
std::string job(int pp, int dp, int tp, const std::string& placement, const std::string& fabric) {
  return "name = \"f\"\ntestbed = \"t3.toml\"\nschedule = \"1f1b\"\nplacement = " + placement +
         "\n[model]\nlayers = 4\nhidden = 1024\nseq_len = 1024\nmicrobatches = 2\n[parallel]\npp = " +
         std::to_string(pp) + "\ndp = " + std::to_string(dp) + "\ntp = " + std::to_string(tp) +
         "\n[compute]\nforward_ms = 1\nbackward_ms = 2\n" + fabric;
}

Experiment parsed(const std::string& toml) { return parse_experiment(toml, "f.toml"); }

std::string parse_error(const std::string& toml) {
  return error_of([&] { parsed(toml); });
}

// The all-reduce of every worker in one DC's ring: its duration, in ns (all members end together).
double allreduce_ns(const Experiment& experiment, double* stage_bytes = nullptr) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment, scenario);
  if (stage_bytes != nullptr) *stage_bytes = static_cast<double>(plan.stage_param_bytes);
  RunRecord record = simulate(plan, scenario, link_model_for(scenario, experiment.scale));
  double longest = 0;
  for (const Event& event : record.events) {
    if (event.kind == OpKind::allreduce)
      longest = std::max(longest, static_cast<double>(event.end_ns - event.start_ns));
  }
  BOOST_REQUIRE(longest > 0);
  return longest;
}

constexpr const char* kOneDc = "[\"a\"]";

}  // namespace

BOOST_AUTO_TEST_SUITE(fabric_keys)

BOOST_AUTO_TEST_CASE(absent_means_the_emulated_testbed_and_empty_means_the_defaults) {
  BOOST_TEST(!parsed(job(1, 2, 1, kOneDc, "")).fabric.has_value());
  Experiment experiment = parsed(job(1, 2, 1, kOneDc, "[fabric]\n"));
  BOOST_REQUIRE(experiment.fabric.has_value());
  const Fabric defaults;
  BOOST_TEST(experiment.fabric->nic_bps == defaults.nic_bps);
  BOOST_TEST(experiment.fabric->gpus_per_server == defaults.gpus_per_server);
  BOOST_TEST(experiment.fabric->oversubscription == 1.0);
}

BOOST_AUTO_TEST_CASE(every_key_is_read) {
  Experiment experiment = parsed(job(1, 2, 1, kOneDc,
                                     "[fabric]\nnic_rate = \"100gbit\"\ngpus_per_server = 4\nnvlink_rate = \"1tbit\"\n"
                                     "oversubscription = 2.5\nlatency = \"2us\"\n"));
  BOOST_REQUIRE(experiment.fabric.has_value());
  BOOST_TEST(experiment.fabric->nic_bps == 100e9);
  BOOST_TEST(experiment.fabric->gpus_per_server == 4);
  BOOST_TEST(experiment.fabric->nvlink_bps == 1e12);
  BOOST_TEST(experiment.fabric->oversubscription == 2.5);
  BOOST_TEST(experiment.fabric->latency_ns == 2000u);
  BOOST_TEST(experiment.where("fabric.nic_rate") == "f.toml:18:12");
}

BOOST_AUTO_TEST_CASE(bad_keys_and_values_are_one_line_errors_at_their_place) {
  const std::string base = job(1, 2, 1, kOneDc, "");  // 16 lines; [fabric] is line 17
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[fabric]\nnic_rte = \"1gbit\"\n",
       R"(f.toml:18:1: unknown key "nic_rte" in [fabric]; did you mean "nic_rate"?)"},
      {"[fabric]\nnic_rate = 400\n", R"(f.toml:18:12: fabric.nic_rate: expected a rate like "400gbit", got 400)"},
      {"[fabric]\nnic_rate = \"400\"\n", "f.toml:18:12: fabric.nic_rate: "},
      {"[fabric]\ngpus_per_server = 0\n",
       "f.toml:18:19: fabric.gpus_per_server: expected an integer from 1 to 1024, got 0"},
      {"[fabric]\noversubscription = 0.5\n",
       "f.toml:18:20: fabric.oversubscription: expected a number from 1 to 1000, got 0.5"},
      {"[fabric]\nlatency = \"2s\"\n", R"(f.toml:18:11: fabric.latency: expected a time from 0s to 1s, got "2s")"},
  };
  for (const auto& [section, expected] : cases) {
    const std::string message = parse_error(base + section);
    BOOST_TEST(message.starts_with(expected), section << " gave " << message);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
  BOOST_TEST(parse_error(harness_test::inserted(base, 4, "fabric = 3")) ==
             "f.toml:4:10: fabric: expected a table ([fabric]), got 3");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fabric_model)

// dp 4 in DC a, one GPU per server: a pipelined ring of 4 hops over the
// fabric, each member sending 2(R-1)/R of the stage at its NIC's rate.
BOOST_AUTO_TEST_CASE(an_allreduce_inside_a_dc_runs_at_nic_rate) {
  double stage_bytes = 0;
  const double ns = allreduce_ns(
      parsed(job(1, 4, 1, kOneDc, "[fabric]\nnic_rate = \"100gbit\"\ngpus_per_server = 1\nlatency = \"10us\"\n")),
      &stage_bytes);
  const double wire_ns = 2.0 * 3 / 4 * stage_bytes * 8 / 100e9 * 1e9;
  BOOST_TEST(ns == wire_ns + 2 * 3 * 10e3, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(oversubscription_slows_it_by_its_ratio) {
  const std::string fabric = "[fabric]\nnic_rate = \"100gbit\"\ngpus_per_server = 1\nlatency = \"0us\"\n";
  const double blocking_free = allreduce_ns(parsed(job(1, 4, 1, kOneDc, fabric)));
  const double oversubscribed = allreduce_ns(parsed(job(1, 4, 1, kOneDc, fabric + "oversubscription = 3\n")));
  BOOST_TEST(oversubscribed == 3 * blocking_free, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(tp_gpus_bring_their_nics_and_a_server_its_nvlink) {
  const std::string fabric = "[fabric]\nnic_rate = \"100gbit\"\nnvlink_rate = \"1tbit\"\nlatency = \"0us\"\n";
  // tp 8 on servers of 8: one worker per server, 8 NICs each.
  const double eight_nics = allreduce_ns(parsed(job(1, 4, 8, kOneDc, fabric + "gpus_per_server = 8\n")));
  const double one_nic = allreduce_ns(parsed(job(1, 4, 1, kOneDc, fabric + "gpus_per_server = 1\n")));
  BOOST_TEST(one_nic == 8 * eight_nics, boost::test_tools::tolerance(1e-6));
  // tp 1, four workers on one server of 8: NVLink, 10x the NIC.
  const double nvlink = allreduce_ns(parsed(job(1, 4, 1, kOneDc, fabric + "gpus_per_server = 8\n")));
  BOOST_TEST(one_nic == 10 * nvlink, boost::test_tools::tolerance(1e-6));
}

// The emulated testbed's model gives the same job a 10 Gbit/s pair shared by
// the ring (all four on one emulated host: free); the fabric is what changes it.
BOOST_AUTO_TEST_CASE(without_fabric_the_intra_dc_pair_carries_it_as_before) {
  auto scenario = three_dcs();
  Plan plan = make_plan(parsed(job(1, 4, 1, kOneDc, "")), scenario);
  RunRecord record = simulate(plan, scenario, link_model_for(scenario, 1.0));
  for (const Event& event : record.events) {
    if (event.kind == OpKind::allreduce) BOOST_TEST(event.end_ns == event.start_ns);
  }
}

BOOST_AUTO_TEST_CASE(the_wan_pairs_stay_the_scenarios) {
  // One stage per DC, a -> b at 1 Gbit/s, 10 ms: the activation's arrival is the same with and without [fabric].
  auto scenario = three_dcs();
  auto arrival = [&](const std::string& fabric) {
    Plan plan = make_plan(parsed(job(2, 1, 1, "[\"a\", \"b\"]", fabric)), scenario);
    RunRecord record = simulate(plan, scenario, link_model_for(scenario, 1.0));
    for (const Event& event : record.events)
      if (event.kind == OpKind::send && event.worker == 0) return event.end_ns;
    return std::int64_t{-1};
  };
  BOOST_TEST(arrival("") > 10'000'000);
  BOOST_TEST(arrival("[fabric]\n") == arrival(""));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(limits)

BOOST_AUTO_TEST_CASE(the_simulator_takes_100000_gpus_the_emulated_testbed_1024_workers) {
  // pp 16 x dp 6250 x tp 1 = 100,000 GPUs parse; one more worker than the cap does not.
  std::string toml = job(16, 6250, 1, "\"atlas\"", "[fabric]\n");
  toml.replace(toml.find("layers = 4"), 10, "layers = 32");
  BOOST_TEST(parse_error(toml) == "(no error)");
  std::string over = job(1, 100000, 1, "\"atlas\"", "[fabric]\n");
  over.replace(over.find("pp = 1"), 6, "pp = 2");
  BOOST_TEST(parse_error(over) == "f.toml:10:1: parallel: pp x dp = 200000 workers; at most 131072");
}

BOOST_AUTO_TEST_CASE(the_emulated_run_refuses_a_fabric_and_more_than_1024_workers) {
  auto scenario = three_dcs();
  Plan with_fabric = make_plan(parsed(job(1, 2, 1, kOneDc, "[fabric]\n")), scenario);
  BOOST_TEST(error_of([&] {
               check_emulated_run(with_fabric, 1);
             }).starts_with("f.toml:17:1: fabric: the emulated testbed's network inside a DC is its [intra_dc] pair"));
  Plan plain = make_plan(parsed(job(1, 2, 1, kOneDc, "")), scenario);
  BOOST_TEST(error_of([&] { check_emulated_run(plain, 1); }) == "(no error)");
  std::string wide = job(2, 600, 1, "\"pp-across-dc\"", "");
  Plan big = make_plan(parsed(wide), scenario);
  BOOST_TEST(error_of([&] { check_emulated_run(big, 1); }) ==
             "f.toml:10:1: parallel: pp x dp = 1200 workers; the emulated testbed runs at most 1024 (--simulate takes "
             "up to 131072)");
}

BOOST_AUTO_TEST_CASE(a_pipelined_ring_is_one_step_per_worker) {
  Experiment experiment = parsed(job(2, 100, 1, "\"pp-across-dc\"", "[fabric]\n"));
  PlanSize size = plan_size(experiment);
  BOOST_TEST(size.steps_per_iteration == size.ops_per_iteration);
  experiment.fabric.reset();
  BOOST_TEST(plan_size(experiment).steps_per_iteration == size.ops_per_iteration + 200u * (2 * 99 - 1));
}

BOOST_AUTO_TEST_CASE(sixty_four_dcs_simulate) {
  std::string scenario_text = "name = \"many\"\n[defaults]\nrate = \"10gbit\"\ndelay = \"20ms\"\n";
  std::string gpus = "[gpus]\n";
  for (int dc = 0; dc < 64; ++dc) {
    scenario_text += "[[dc]]\nname = \"d" + std::to_string(dc) + "\"\n";
    gpus += "d" + std::to_string(dc) + " = 16\n";
  }
  auto scenario = wanlab::emulator::parse_scenario(scenario_text, "many.toml");
  std::string toml = job(64, 8, 2, "\"atlas\"", "[fabric]\n" + gpus);
  toml.replace(toml.find("layers = 4"), 10, "layers = 64");
  Experiment experiment = parsed(toml);
  Plan plan = make_plan(experiment, scenario);
  BOOST_TEST(plan.gpus_used == 1024);
  RunRecord record = simulate(plan, scenario, link_model_for(scenario, 1.0));
  // 63 WAN hops of at least 20 ms each way, twice (forward and backward).
  BOOST_TEST(record.iteration_end_ns.at(0) > std::int64_t{2} * 63 * 20'000'000);
}

BOOST_AUTO_TEST_SUITE_END()
