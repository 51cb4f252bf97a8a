// `wanlab attach` on interfaces that are not ours: two namespaces joined by a
// veth stand in for two Mininet hosts. It must shape, and `down` must remove
// exactly what it added.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "support/wanlab_cli.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/testbed.hpp"

using namespace wanlab;
namespace em = wanlab::emulator;
namespace base = wanlab::base;

namespace {

constexpr std::uint32_t kAddrA = 0x0a630001;  // 10.99.0.1, DC "a"
constexpr std::uint32_t kAddrB = 0x0a630101;  // 10.99.1.1, DC "b"

const char* kScenario = R"(
name = "itest-att"
[network]
pool = "10.99.0.0/16"
[defaults]
delay = "20ms"
rate = "20mbit"
[[dc]]
name = "a"
[[dc]]
name = "b"
)";

// Two namespaces that play the user's hosts; built with our rtnetlink code
// but not by the code under test.
struct UserHosts {
  UserHosts() {
    em::create_netns("wltest-att-a");
    em::create_netns("wltest-att-b");
    {
      em::NetnsScope in_a("wltest-att-a");
      em::Rtnl rtnl;
      base::UniqueFd b = em::open_netns("wltest-att-b");
      rtnl.add_veth("veth-a", "veth-b", b.get());
      const int a_if = rtnl.link_index("veth-a");
      rtnl.add_address_v4(a_if, kAddrA, 16);
      rtnl.set_up(a_if);
    }
    em::NetnsScope in_b("wltest-att-b");
    em::Rtnl rtnl;
    const int b_if = rtnl.link_index("veth-b");
    rtnl.add_address_v4(b_if, kAddrB, 16);
    rtnl.set_up(b_if);
    // The user's own tc and iptables configuration on b, which must survive.
    rtnl.add_clsact(b_if);
  }
  ~UserHosts() {
    test::wanlab({"down", "itest-att"});
    test::wanlab({"down", "itest-att2"});
    for (const char* ns : {"wltest-att-a", "wltest-att-b"}) {
      base::terminate_pids(em::netns_pids(ns));
      em::delete_netns(ns);
    }
  }
};

// The median RTT between the user's hosts with nothing of ours on the path.
double unshaped_rtt_ms(const em::Endpoint& a, const em::Endpoint& b) {
  return test::least_median_ms([&] { return em::median(em::measure_rtt_ms(a, b, 10, 5, em::RttTiming::application)); },
                               test::rtt_upper_ms(0.0));
}

std::string in_ns(const std::string& ns, std::vector<std::string> command) {
  command.insert(command.begin(), {"ip", "netns", "exec", ns});
  return test::run(command).output;
}

}  // namespace

BOOST_AUTO_TEST_CASE(attach_shapes_existing_interfaces_and_down_removes_only_its_own) {
  UserHosts hosts;
  BOOST_TEST_REQUIRE(
      test::run({"ip", "netns", "exec", "wltest-att-b", "iptables-legacy", "-t", "mangle", "-A", "PREROUTING", "-p",
                 "udp", "--dport", "9", "-m", "comment", "--comment", "users-rule", "-j", "ACCEPT"})
          .status == 0);
  test::ScenarioFile file("itest-att", kScenario);
  const em::Endpoint a{"wltest-att-a", kAddrA}, b{"wltest-att-b", kAddrB};
  // The client's own clock: on the nfqueue path these interfaces hold what
  // arrives on them, after the kernel's receive timestamp, which would hide
  // the delay (and a leftover hold after down).
  BOOST_TEST(unshaped_rtt_ms(a, b) <= test::rtt_upper_ms(0.0));

  // Each end shapes one direction, so attach on both: with sch_fq (fq path)
  // what leaves the interface, without it (nfqueue path) what arrives on it.
  const auto on_b = test::wanlab(
      {"attach", "veth-b", file.path(), "--netns", "wltest-att-b", "--quiet", "--release", test::release_choice()});
  BOOST_TEST_REQUIRE(on_b.status == 0, on_b.output);
  const auto on_a = test::wanlab({"attach", "veth-a", file.path(), "--netns", "wltest-att-a", "--name", "itest-att2",
                                  "--quiet", "--release", test::release_choice()});
  BOOST_TEST_REQUIRE(on_a.status == 0, on_a.output);
  const double rtt =
      test::least_median_ms([&] { return em::median(em::measure_rtt_ms(a, b, 20, 10, em::RttTiming::application)); },
                            test::rtt_upper_ms(40.0));
  BOOST_TEST(rtt >= 40.0);
  BOOST_TEST(rtt <= test::rtt_upper_ms(40.0));

  // The program on veth-a counts what it shapes there: on the fq path the
  // echoes a sends (a -> b), on the nfqueue path the replies b sends (b -> a);
  // the other direction passes that hook unshaped and uncounted.
  const bool fq = em::load_state("itest-att2").release == em::ReleasePath::fq;
  BOOST_TEST_MESSAGE("release path " << (fq ? "fq" : "nfqueue") << ", median RTT " << rtt << " ms, configured 40 ms");
  const std::string shaped_from = fq ? "a" : "b", shaped_to = fq ? "b" : "a";
  const auto stats = test::wanlab({"stats", "--testbed", "itest-att2", "--json", "--interval", "0.1"});
  BOOST_TEST_REQUIRE(stats.status == 0, stats.output);
  const auto packets = [&](const std::string& from, const std::string& to) {
    return test::json_number(test::json_object_with(stats.output, {{"from", from}, {"to", to}}), "packets");
  };
  BOOST_TEST(packets(shaped_from, shaped_to) >= 20, stats.output);
  BOOST_TEST(packets(shaped_to, shaped_from) <= 0, stats.output);

  // A sender on the attached host itself gets the pair's rate. On the fq path
  // its packets wait in fq on their own host, where TCP's small-queue limit
  // counts them: without the detour through the interface's ingress
  // (wanlab_tc.bpf.c) one stream got 2.8 of 20 Mbit/s there.
  const double goodput = em::measure_goodput_bps(a, b, em::GoodputOptions{});
  BOOST_TEST_MESSAGE("goodput a -> b " << goodput / 1e6 << " Mbit/s, configured 20");
  BOOST_TEST(goodput >= 0.6 * 20e6);
  BOOST_TEST(goodput <= 1.05 * 20e6);
  const std::string detour_sysctls =
      in_ns("wltest-att-a", {"sysctl", "-n", "net.ipv4.ip_forward", "net.ipv4.conf.veth-a.accept_local"});
  BOOST_TEST(detour_sysctls == (fq ? "1\n1\n" : "0\n0\n"), detour_sysctls);

  BOOST_TEST(test::wanlab({"down", "itest-att"}).status == 0);
  BOOST_TEST(test::wanlab({"down", "itest-att2"}).status == 0);
  const std::string b_filters = in_ns("wltest-att-b", {"tc", "filter", "show", "dev", "veth-b", "ingress"});
  BOOST_TEST(b_filters.find("wanlab") == std::string::npos, b_filters);
  BOOST_TEST(in_ns("wltest-att-b", {"tc", "qdisc", "show", "dev", "veth-b"}).find("clsact") != std::string::npos);
  BOOST_TEST(in_ns("wltest-att-a", {"tc", "qdisc", "show", "dev", "veth-a"}).find("clsact") == std::string::npos);
  const std::string rules = in_ns("wltest-att-b", {"iptables-legacy", "-t", "mangle", "-S"});
  BOOST_TEST(rules.find("users-rule") != std::string::npos, rules);
  BOOST_TEST(rules.find("wanlab") == std::string::npos, rules);
  // What the detour changed is back as it was (a new namespace's defaults).
  const std::string sysctls_after =
      in_ns("wltest-att-a", {"sysctl", "-n", "net.ipv4.ip_forward", "net.ipv4.conf.veth-a.accept_local",
                             "net.ipv4.conf.veth-a.send_redirects"});
  BOOST_TEST(sysctls_after == "0\n0\n1\n", sysctls_after);
  BOOST_TEST(test::leftovers("itest-att").empty(), test::leftovers("itest-att"));
  BOOST_TEST(test::leftovers("itest-att2").empty(), test::leftovers("itest-att2"));
  BOOST_TEST(unshaped_rtt_ms(a, b) <= test::rtt_upper_ms(0.0));
}

BOOST_AUTO_TEST_CASE(attach_refuses_bad_interfaces_and_leaves_nothing) {
  UserHosts hosts;
  test::ScenarioFile file("itest-att", kScenario);
  const auto missing = test::wanlab({"attach", "eth9", file.path(), "--netns", "wltest-att-b"});
  BOOST_TEST(missing.status == 1);
  BOOST_TEST(missing.output.find("eth9") != std::string::npos, missing.output);
  const auto wildcard = test::wanlab({"attach", "veth+", file.path(), "--netns", "wltest-att-b"});
  BOOST_TEST(wildcard.status == 1);
  BOOST_TEST(wildcard.output.find("expected 1-15 of") != std::string::npos, wildcard.output);
  const auto private_mounts =
      test::run({"ip", "netns", "exec", "wltest-att-b", test::wanlab_bin(), "attach", "veth-b", file.path()});
  BOOST_TEST(private_mounts.status == 1);
  BOOST_TEST(private_mounts.output.find("--netns") != std::string::npos, private_mounts.output);
  BOOST_TEST(test::leftovers("itest-att").empty(), test::leftovers("itest-att"));
}

// A root qdisc the user configured (a Mininet TCLink's htb): on the fq path,
// which needs its own root fq, attach refuses in one line that says what to
// do; on the nfqueue path, which shapes at ingress, the two compose. Either way
// the user's qdisc is there afterwards and nothing of ours is.
BOOST_AUTO_TEST_CASE(attach_over_a_configured_root_qdisc_refuses_on_fq_and_composes_on_nfqueue) {
  UserHosts hosts;
  test::ScenarioFile file("itest-att", kScenario);
  const auto htb = test::run({"ip", "netns", "exec", "wltest-att-a", "tc", "qdisc", "add", "dev", "veth-a", "root",
                              "handle", "5:", "htb", "default", "1"});
  BOOST_TEST_REQUIRE(htb.status == 0, htb.output);
  {
    em::NetnsScope in_a("wltest-att-a");
    em::Rtnl rtnl;
    const auto root = rtnl.configured_root_qdisc(rtnl.link_index("veth-a"));
    BOOST_TEST_REQUIRE(root.has_value());
    BOOST_TEST(root->kind == "htb");
    BOOST_TEST(root->handle == 0x50000u);
    BOOST_TEST(!rtnl.configured_root_qdisc(rtnl.link_index("lo")).has_value());  // the kernel's noqueue
  }
  const std::string choice = test::release_choice();
  const bool fq = choice == "fq" || (choice == "auto" && test::kernel_has_sch_fq());
  const auto attached =
      test::wanlab({"attach", "veth-a", file.path(), "--netns", "wltest-att-a", "--quiet", "--release", choice});
  if (fq) {
    BOOST_TEST(attached.status == 1, attached.output);
    BOOST_TEST(attached.output.find("veth-a has a root qdisc already (htb 5:") != std::string::npos, attached.output);
    BOOST_TEST(attached.output.find("attach with --release nfqueue") != std::string::npos, attached.output);
    BOOST_TEST(std::count(attached.output.begin(), attached.output.end(), '\n') == 1, attached.output);
  } else {
    BOOST_TEST(attached.status == 0, attached.output);
    BOOST_TEST(test::wanlab({"down", "itest-att"}).status == 0);
  }
  const std::string qdiscs = in_ns("wltest-att-a", {"tc", "qdisc", "show", "dev", "veth-a"});
  BOOST_TEST(qdiscs.find("qdisc htb 5: root") != std::string::npos, qdiscs);
  BOOST_TEST(qdiscs.find("clsact") == std::string::npos, qdiscs);
  BOOST_TEST(test::leftovers("itest-att").empty(), test::leftovers("itest-att"));
}
