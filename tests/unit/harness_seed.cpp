// The experiment's seed: two plans and simulations with one seed are the same
// run, results.json and trace.json byte for byte (a simulated results.json has
// no wall-clock field: its times are simulated). What the seed draws in a
// simulation is the prefill arrivals; the planner and the simulator draw
// nothing, so another seed changes the requests and leaves the training alone.
#include <boost/test/unit_test.hpp>

#include "harness_support.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/record/results.hpp"
#include "wanlab/harness/report/trace.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;
using harness_test::parse_json;

namespace {

// Atlas over the three DCs with Poisson prefill arrivals that take the
// experiment's seed (no seed of their own) and a small served model.
const std::string kPrefill = R"(
[prefill]
arrivals = { rate = "40/s", prompt_median = 300, prompt_p90 = 1200 }
decode_dc = "c"
[prefill.model]
layers = 4
hidden = 512
kv_heads = 8
head_dim = 64
[prefill.time]
tokens = [128, 1024]
ms = [1, 3]
)";

struct Outputs {
  std::string results;
  std::string trace;
  RunRecord record;
};

Outputs plan_and_simulate(std::uint64_t seed) {
  const auto scenario = harness_test::three_dcs();
  const Experiment experiment = harness_test::experiment(
      "schedule = \"1f1b\"\nstreams = 4\ntemporal_sharing = true\nseed = " + std::to_string(seed), 4, 2, 4, 5, 10,
      kPrefill);
  const Plan plan = make_plan(experiment, scenario);
  Outputs out;
  out.record = simulate(plan, scenario, link_model_for(scenario, plan.experiment.scale), 3);
  out.results = results_json(out.record, harness_test::kThreeDcScenario);
  out.trace = trace_json(out.record);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_seed_plans_and_simulates_identically) {
  const Outputs first = plan_and_simulate(7);
  const Outputs second = plan_and_simulate(7);
  BOOST_REQUIRE(first.record.prefill.has_value());
  BOOST_TEST(first.record.prefill->requests.size() > 10u, "the arrivals drew too few requests to compare");
  BOOST_TEST(first.results == second.results);
  BOOST_TEST(first.trace == second.trace);
  BOOST_TEST(parse_json(first.results)["seed"].number == 7);
}

BOOST_AUTO_TEST_CASE(another_seed_draws_other_requests_and_the_same_training) {
  const Outputs seven = plan_and_simulate(7);
  const Outputs eight = plan_and_simulate(8);
  std::vector<std::int64_t> arrivals_seven, arrivals_eight;
  for (const RequestOutcome& r : seven.record.prefill->requests) arrivals_seven.push_back(r.arrival_ns);
  for (const RequestOutcome& r : eight.record.prefill->requests) arrivals_eight.push_back(r.arrival_ns);
  BOOST_TEST((arrivals_seven != arrivals_eight));
  // The training side: every event and transfer at the same simulated time.
  BOOST_REQUIRE(seven.record.events.size() == eight.record.events.size());
  for (std::size_t i = 0; i < seven.record.events.size(); ++i) {
    BOOST_TEST(seven.record.events[i].start_ns == eight.record.events[i].start_ns);
    BOOST_TEST(seven.record.events[i].end_ns == eight.record.events[i].end_ns);
  }
  BOOST_REQUIRE(seven.record.transfers.size() == eight.record.transfers.size());
  for (std::size_t i = 0; i < seven.record.transfers.size(); ++i)
    BOOST_TEST(seven.record.transfers[i].last_received_ns == eight.record.transfers[i].last_received_ns);
}
