// `wanlab train --runtime slurm`: the allocation's nodes become the plan's
// hosts by the scenario's machines (the resolver stands for /etc/hosts), and a
// plan that needs a DC the allocation lacks is refused before anything starts.
// The run itself, across guests under Slurm, is tests/multihost/slurm.cpp.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "coordinator/machines_run.hpp"
#include "wanlab/emulator/scenario.hpp"

namespace em = wanlab::emulator;
namespace hs = wanlab::harness;
namespace rd = wanlab::harness::run_detail;

namespace {

const char* kScenario = R"(name = "mh"
[defaults]
rate = "20mbit"
delay = "15ms"
[[dc]]
name = "east"
machines = ["m1", "m2"]
[[dc]]
name = "west"
machines = ["10.99.1.0/29"]
gateway = "10.99.1.3"
)";

std::vector<std::uint32_t> resolve(const std::string& host) {
  if (host == "m1") return {0x0a630001};
  if (host == "m2") return {0x0a630002};
  if (host == "m3") return {0x0a630103};
  if (host == "m4") return {0x0a630104};
  if (host == "stranger") return {0x0a010101};
  throw std::runtime_error("machine \"" + host + "\": cannot resolve");
}

}  // namespace

BOOST_AUTO_TEST_CASE(nodes_become_each_dcs_hosts_in_the_allocations_order) {
  const em::Scenario scenario = em::parse_scenario(kScenario, "mh.toml");
  const rd::AllocationHosts allocation = rd::allocation_hosts(scenario, {"m3", "m1", "m2", "m4"}, resolve);
  BOOST_REQUIRE(allocation.hosts.size() == 4u);
  BOOST_TEST(allocation.hosts[0].name == "west-0");
  BOOST_TEST(allocation.hosts[0].ipv4 == 0x0a630103u);
  BOOST_TEST(allocation.hosts[0].netns == "");
  BOOST_TEST(allocation.hosts[1].name == "east-0");
  BOOST_TEST(allocation.hosts[2].name == "east-1");
  BOOST_TEST(allocation.hosts[2].index == 1);
  BOOST_TEST(allocation.hosts[3].name == "west-1");  // by address within the range
  BOOST_TEST(allocation.nodes.at("east-1") == "m2");
  BOOST_TEST(allocation.nodes.at("west-1") == "m4");
  BOOST_TEST(allocation.planning.dcs[0].hosts == 2);
  BOOST_TEST(allocation.planning.dcs[1].hosts == 2);
}

BOOST_AUTO_TEST_CASE(a_node_in_no_dc_or_twice_is_an_error_naming_it) {
  const em::Scenario scenario = em::parse_scenario(kScenario, "mh.toml");
  try {
    rd::allocation_hosts(scenario, {"m1", "stranger"}, resolve);
    BOOST_FAIL("a node in no DC was taken");
  } catch (const std::runtime_error& error) {
    const std::string what = error.what();
    BOOST_TEST(what.find("node stranger: ") == 0u, what);
    BOOST_TEST(what.find("is in no DC's machines") != std::string::npos, what);
  }
  BOOST_CHECK_THROW(rd::allocation_hosts(scenario, {"m1", "m1"}, resolve), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_plan_beyond_the_allocation_is_refused) {
  const em::Scenario scenario = em::parse_scenario(kScenario, "mh.toml");
  const rd::AllocationHosts east_only = rd::allocation_hosts(scenario, {"m1", "m2"}, resolve);
  BOOST_TEST(east_only.planning.dcs[1].hosts == 1);  // the plan still has a west host...
  hs::Plan plan;
  plan.workers.resize(2);
  plan.workers[0].worker = hs::Worker{};
  plan.workers[0].worker.host = "east-1";
  plan.workers[1].worker.id = 1;
  plan.workers[1].worker.stage = 1;
  plan.workers[1].worker.dc_name = "west";
  plan.workers[1].worker.host = "west-0";
  try {
    rd::check_plan_fits(plan, east_only.planning, east_only);  // ... which no node holds
    BOOST_FAIL("a worker without a node was accepted");
  } catch (const hs::RunError& error) {
    BOOST_TEST(std::string(error.what())
                       .find("worker 1 (stage 1, replica 0) in DC \"west\", where the allocation "
                             "has no node") != std::string::npos,
               error.what());
  }
  plan.workers.pop_back();
  BOOST_CHECK_NO_THROW(rd::check_plan_fits(plan, east_only.planning, east_only));
}

// BubbleTea's decode sink goes on its decode DC's first host: a DC without a
// node cannot hold it, whether or not a worker trains there.
BOOST_AUTO_TEST_CASE(a_decode_sink_beyond_the_allocation_is_refused) {
  const em::Scenario scenario = em::parse_scenario(kScenario, "mh.toml");
  const rd::AllocationHosts east_only = rd::allocation_hosts(scenario, {"m1", "m2"}, resolve);
  hs::Plan plan;
  plan.workers.resize(1);
  plan.workers[0].worker.host = "east-1";
  plan.experiment.prefill.enabled = true;
  plan.experiment.prefill.decode_dc = "west";
  try {
    rd::check_plan_fits(plan, east_only.planning, east_only);
    BOOST_FAIL("a decode sink without a node was accepted");
  } catch (const hs::RunError& error) {
    BOOST_TEST(std::string(error.what())
                       .find("[prefill] decodes worker 0's requests in DC \"west\", where the "
                             "allocation has no node") != std::string::npos,
               error.what());
  }
  plan.experiment.prefill.decode_dc = "local";  // east-0, on m1
  BOOST_CHECK_NO_THROW(rd::check_plan_fits(plan, east_only.planning, east_only));
  plan.experiment.prefill.enabled = false;
  plan.experiment.prefill.decode_dc = "west";
  BOOST_CHECK_NO_THROW(rd::check_plan_fits(plan, east_only.planning, east_only));
}
