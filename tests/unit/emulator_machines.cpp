// A scenario over machines: `machines` and `gateway` in [[dc]], how a machine
// finds its DC and role (the resolver given here stands for /etc/hosts), and
// the state `wanlab join` keeps, read as strictly as the rest of state.toml.
// The data plane across machines is tested in guests (multihost/wan.cpp).
#include <boost/test/unit_test.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/scratch.hpp"
#include "wanlab/base/one_line.hpp"
#include "wanlab/emulator/machines.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace em = wanlab::emulator;

namespace {

constexpr std::uint32_t ip(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

// Lines 1-9; cases continue at line 10.
const std::string kMachines = R"(name = "mh"
[defaults]
delay = "10ms"
[[dc]]
name = "east"
machines = ["node1", "node2.cluster"]
[[dc]]
name = "west"
machines = ["node9", "10.0.1.0/28"]
)";

std::string error_of(const std::string& toml) {
  try {
    em::parse_scenario(toml, "m.toml");
  } catch (const em::ScenarioError& error) {
    return error.what();
  }
  return "(no error)";
}

// /etc/hosts for the cases below.
std::vector<std::uint32_t> hosts(const std::string& name) {
  static const std::map<std::string, std::vector<std::uint32_t>> table{{"node1", {ip(10, 0, 0, 1)}},
                                                                       {"node2.cluster", {ip(10, 0, 0, 2)}},
                                                                       {"node9", {ip(10, 0, 0, 9)}},
                                                                       {"loopy", {ip(127, 0, 1, 1)}},
                                                                       {"twice", {ip(10, 0, 0, 3), ip(10, 0, 0, 4)}}};
  const auto found = table.find(name);
  if (found == table.end())
    throw std::runtime_error("machine \"" + name + "\": cannot resolve: Name or service not known");
  return found->second;
}

em::LocalMachine machine(const std::string& name, std::uint32_t address) { return {name, {{"eth0", address}}}; }

std::string role_error(const std::string& toml, const em::LocalMachine& me) {
  try {
    em::find_machine_role(em::parse_scenario(toml, "m.toml"), me, hosts);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(machines_and_gateways_are_read) {
  const em::Scenario scenario = em::parse_scenario(kMachines + "gateway = \"10.0.1.5\"\n", "m.toml");
  BOOST_TEST(scenario.over_machines());
  BOOST_REQUIRE(scenario.dcs.size() == 2u);
  BOOST_TEST(scenario.dcs[0].gateway == "node1");  // the first, by default
  BOOST_TEST(!scenario.dcs[0].machines[0].prefix.has_value());
  BOOST_TEST(scenario.dcs[1].gateway == "10.0.1.5");
  BOOST_REQUIRE(scenario.dcs[1].machines[1].prefix.has_value());
  BOOST_TEST(scenario.dcs[1].machines[1].prefix->len == 28);
  BOOST_TEST(!em::parse_scenario("name = \"t\"\n[defaults]\ndelay = \"1ms\"\n[[dc]]\nname = \"a\"\n", "t.toml")
                  .over_machines());
}

BOOST_AUTO_TEST_CASE(bad_machines_are_one_line_naming_the_field) {
  const std::string two = "name = \"mh\"\n[defaults]\ndelay = \"1ms\"\n[[dc]]\nname = \"east\"\n";
  const std::vector<std::pair<std::string, std::string>> cases{
      {kMachines + "gateway = \"10.0.1.0/28\"\n", "m.toml:10:11: dc.gateway: \"10.0.1.0/28\" is not one machine"},
      {kMachines + "gateway = \"node2\"\n", "dc.gateway: \"node2\" is not one machine of DC \"west\""},
      {two + "machines = []\n", "m.toml:6:12: dc.machines: expected a list of host names or addresses"},
      {two + "machines = \"node1\"\n", "dc.machines: expected a list"},
      {two + "machines = [\"node_1\"]\n", "dc.machines: \"node_1\" is neither an IPv4 address"},
      {two + "machines = [\"-node\"]\n", "is neither"},
      {two + "machines = [\"10.0.0.0/33\"]\n", "is neither"},
      {two + "machines = [\"127.0.0.1\"]\n", "dc.machines: \"127.0.0.1\" overlaps 127.0.0.0/8"},
      {two + "machines = [\"10.0.0.0/24\"]\n", "dc.gateway: missing; the first of DC \"east\"'s machines is a range"},
      {two + "machines = [\"a\", \"a\"]\n", "dc.machines: \"a\" is also in DC \"east\""},
      {two + "machines = [\"a\"]\n[[dc]]\nname = \"west\"\nmachines = [\"a\"]\n",
       "m.toml:9:13: dc.machines: \"a\" is also in DC \"east\" (\"a\" at m.toml:6:13)"},
      {two +
           "machines = [\"10.0.0.0/24\"]\ngateway = \"10.0.0.1\"\n[[dc]]\nname = \"west\"\nmachines = [\"10.0.0.7\"]\n",
       "dc.machines: \"10.0.0.7\" is also in DC \"east\""},
      {two + "machines = [\"a\"]\n[[dc]]\nname = \"west\"\n", "dc.machines: DC \"west\" has none"},
      {two + "machines = [\"a\"]\nhosts = 2\n", "dc.hosts: a DC of machines has no emulated hosts"},
      {two + "gateway = \"a\"\n", "dc.gateway: only a DC of machines has one"},
      {two + "machines = [\"a\"]\n[network]\npool = \"10.1.0.0/16\"\n", "network.pool: a scenario over machines"},
      {two + "machines = [\"a\"]\n[intra_dc]\ndelay = \"1ms\"\n", "[intra_dc]: a DC of machines"},
  };
  for (const auto& [toml, expected] : cases) {
    const std::string message = error_of(toml);
    BOOST_TEST_CONTEXT(toml << "\n  got: " << message) {
      BOOST_TEST(message.find(expected) != std::string::npos);
      BOOST_TEST(wanlab::base::one_line_problem(message) == "");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_machine_finds_its_dc_and_role_by_name_or_address) {
  const em::Scenario scenario = em::parse_scenario(kMachines + "gateway = \"10.0.1.5\"\n", "m.toml");
  // By host name (short or full), the first machine of east is its gateway.
  const em::MachineRole node1 = em::find_machine_role(scenario, machine("node1.cluster", ip(10, 0, 0, 1)), hosts);
  BOOST_TEST(node1.dc == 0);
  BOOST_TEST(node1.gateway);
  BOOST_TEST(node1.dev == "eth0");
  BOOST_TEST(node1.gateway_address == ip(10, 0, 0, 1));
  // A member routes west's machines, its range and node9, through node1.
  const em::MachineRole node2 = em::find_machine_role(scenario, machine("node2", ip(10, 0, 0, 2)), hosts);
  BOOST_TEST(!node2.gateway);
  BOOST_TEST(node2.gateway_address == ip(10, 0, 0, 1));
  BOOST_REQUIRE(node2.remote_prefixes.size() == 2u);
  BOOST_TEST((node2.remote_prefixes[0] == em::Ipv4Prefix{ip(10, 0, 0, 9), 32}));
  BOOST_TEST((node2.remote_prefixes[1] == em::Ipv4Prefix{ip(10, 0, 1, 0), 28}));
  BOOST_TEST(node2.dc_prefixes.size() == 4u);
  // By address within a range, whatever its name; west's gateway by address.
  const em::MachineRole gateway = em::find_machine_role(scenario, machine("whatever", ip(10, 0, 1, 5)), hosts);
  BOOST_TEST(gateway.dc == 1);
  BOOST_TEST(gateway.gateway);
  const em::MachineRole member = em::find_machine_role(scenario, machine("x", ip(10, 0, 1, 6)), hosts);
  BOOST_TEST(!member.gateway);
  BOOST_TEST(member.address == ip(10, 0, 1, 6));
}

BOOST_AUTO_TEST_CASE(a_machine_that_cannot_be_placed_says_why) {
  const std::string base = "name = \"mh\"\n[defaults]\ndelay = \"1ms\"\n[[dc]]\nname = \"east\"\n";
  const std::vector<std::tuple<std::string, em::LocalMachine, std::string>> cases{
      {kMachines, machine("node5", ip(10, 0, 0, 5)),
       "this machine (host name \"node5\", addresses 10.0.0.5 on eth0) is in no DC's machines in m.toml"},
      {kMachines, machine("node1", ip(10, 0, 0, 7)),
       "machine \"node1\" (DC \"east\") is this machine by name, but resolves to 10.0.0.1, which no interface"},
      {base + "machines = [\"loopy\"]\n", machine("loopy", ip(10, 0, 0, 1)), "resolves to 127.0.1.1 (loopback"},
      {base + "machines = [\"nowhere\"]\n", machine("a", ip(10, 0, 0, 1)), "machine \"nowhere\": cannot resolve"},
      {base + "machines = [\"10.0.0.0/24\"]\ngateway = \"10.0.0.3\"\n[[dc]]\nname = \"west\"\nmachines = [\"twice\"]\n",
       machine("b", ip(10, 0, 0, 4)), "this machine (host name \"b\", addresses 10.0.0.4 on eth0) is"},
      {base + "machines = [\"twice\"]\n", machine("twice", ip(10, 0, 0, 3)),
       "DC \"east\": gateway \"twice\" resolves to 2 addresses"},
      {"name = \"t\"\n[defaults]\ndelay = \"1ms\"\n[[dc]]\nname = \"a\"\n", machine("a", ip(10, 0, 0, 1)),
       "m.toml: no DC names its machines (dc.machines)"},
  };
  for (const auto& [toml, me, expected] : cases) {
    const std::string message = role_error(toml, me);
    BOOST_TEST_CONTEXT(toml << "\n  got: " << message) {
      BOOST_TEST(message.find(expected) != std::string::npos);
      BOOST_TEST(wanlab::base::one_line_problem(message) == "");
    }
  }
}

BOOST_AUTO_TEST_CASE(machine_host_names_follow_rfc_1123) {
  for (const std::string good : {"node1", "Node-1", "a.b.c", "n1.cluster.example", "7"})
    BOOST_TEST(em::is_valid_machine_name(good), good);
  for (const std::string& bad :
       std::vector<std::string>{"", "-a", "a-", "a..b", ".a", "a.", "a_b", "a b", "a;rm", std::string(64, 'a')})
    BOOST_TEST(!em::is_valid_machine_name(bad), bad);
}

namespace {

const std::string kMemberState = R"(name = "mh"
scenario = "/run/wanlab/mh/scenario.toml"
release = "fq"
release_reason = "a scenario over machines shapes on the gateway's NIC with sch_fq"
daemon_pid = 0
created_unix = 1700000000
created_mono_ns = 1
kind = "member"
netns = "wanlab-mh.attached"
queue_num = 0
dev = "eth0"
created_clsact = false
created_fq = false
dcs = ["east", "west"]
hosts = []
sysctls = []
)";

std::string state_error(const wanlab::test::Scratch& scratch, const std::string& text) {
  try {
    em::read_state_file(scratch.file("state.toml", text), "mh");
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_machines_part_of_the_state_is_read_strictly) {
  wanlab::test::Scratch scratch("machine-state");
  const std::string member = kMemberState + R"([machine]
role = "member"
dc = "east"
address = "10.0.0.2"
gateway_address = "10.0.0.1"
routes = ["10.0.1.0/28", "10.0.0.9/32"]
)";
  const em::TestbedState state = em::read_state_file(scratch.file("state.toml", member), "mh");
  BOOST_TEST((state.kind == em::TestbedKind::member));
  BOOST_REQUIRE(state.machine.has_value());
  BOOST_TEST(!state.machine->gateway);
  BOOST_TEST(state.machine->routes.size() == 2u);
  BOOST_TEST(state.machine->gateway_address == ip(10, 0, 0, 1));

  auto gateway_state = [&](const std::string& path, const std::string& before) {
    std::string text = kMemberState;
    text.replace(text.find("kind = \"member\""), 15, "kind = \"attached\"");
    text.replace(text.find("sysctls = []"), 12, "sysctls = [{ path = \"" + path + "\", before = \"" + before + "\" }]");
    return text +
           "[machine]\nrole = \"gateway\"\ndc = \"east\"\naddress = \"10.0.0.1\"\ngateway_address = "
           "\"10.0.0.1\"\nroutes = []\n";
  };
  const em::TestbedState gateway = em::read_state_file(
      scratch.file("state.toml", gateway_state("/proc/sys/net/ipv4/conf/eth0/send_redirects", "1")), "mh");
  BOOST_REQUIRE(gateway.machine.has_value());
  BOOST_TEST(gateway.sysctls.size() == 1u);
  // down writes these back as root: nothing but the gateway's own sysctls, and only 0 or 1.
  const std::vector<std::pair<std::string, std::string>> bad{
      {state_error(scratch, gateway_state("/proc/sys/kernel/core_pattern", "1")), "not a sysctl attach changes"},
      {state_error(scratch, gateway_state("/proc/sys/net/ipv4/conf/eth1/send_redirects", "1")), "not a sysctl"},
      {state_error(scratch, gateway_state("/proc/sys/net/ipv4/ip_forward", "|/bin/sh")), "expected \"0\" or \"1\""},
      {state_error(scratch, kMemberState), "machine: missing"},
      {state_error(scratch, member + "extra = 1\n"), "unknown key \"extra\""},
      {state_error(scratch, kMemberState + "[machine]\nrole = \"gateway\"\ndc = \"east\"\naddress = \"10.0.0.1\"\n"
                                           "gateway_address = \"10.0.0.1\"\nroutes = []\n"),
       "machine.role: does not match"},
      {state_error(scratch, kMemberState + "[machine]\nrole = \"member\"\ndc = \"north\"\naddress = \"10.0.0.1\"\n"
                                           "gateway_address = \"10.0.0.1\"\nroutes = []\n"),
       "machine.dc: not one of the testbed's DCs"},
      {state_error(scratch, kMemberState + "[machine]\nrole = \"member\"\ndc = \"east\"\naddress = \"10.0.0.1\"\n"
                                           "gateway_address = \"10.0.0.1\"\nroutes = [\"10.0.1.1/24\"]\n"),
       "machine.routes[0]: "},
  };
  for (const auto& [message, expected] : bad) {
    BOOST_TEST_CONTEXT(message) {
      BOOST_TEST(message.find(expected) != std::string::npos);
      BOOST_TEST(wanlab::base::one_line_problem(message) == "");
    }
  }
}

// A gateway forwards every packet to another DC: a FORWARD policy of DROP (as
// Docker sets it) is found in `iptables -S` output, and only there.
BOOST_AUTO_TEST_CASE(a_forward_policy_of_drop_is_found) {
  BOOST_TEST(em::forward_policy_drops("-P FORWARD DROP\n-N DOCKER\n-A FORWARD -j DOCKER-USER\n"));
  BOOST_TEST(em::forward_policy_drops("-P FORWARD DROP"));
  BOOST_TEST(!em::forward_policy_drops("-P FORWARD ACCEPT\n"));
  BOOST_TEST(!em::forward_policy_drops("-A FORWARD -j DROP\n"));  // a rule, not the policy
  BOOST_TEST(!em::forward_policy_drops("-P INPUT DROP\n-P FORWARD ACCEPT\n"));
  BOOST_TEST(!em::forward_policy_drops(""));
}
