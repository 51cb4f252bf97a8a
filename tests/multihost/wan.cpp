// A scenario over machines on real, separate kernels: three QEMU guests
// (Debian's stock kernel, so the fq path) on one bridge
// (scripts/vm/run-machines.sh), m1 and m2 in DC east with m1 its gateway, m3
// in DC west. Each guest runs multihost/wan-guest.sh: `wanlab join`, ping
// and iperf3 across the WAN, `wanlab down`. Here we check what they measured.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "multihost/machines.hpp"
#include "support/json.hpp"

using namespace wanlab::test;

namespace {

// tests/data/multihost/two-dc.toml
constexpr double kRateBps = 10e6;
constexpr double kRttMs = 30;

// The receiver's goodput of an iperf3 -J run.
double received_bps(const std::filesystem::path& path) {
  const auto report = nlohmann::json::parse(slurp(path));
  return report.at("end").at("sum_received").at("bits_per_second").get<double>();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_wan_over_three_machines_shapes_each_dc_pair_once_and_leaves_nothing) {
  Machines machines("wan-guest.sh");
  BOOST_TEST_REQUIRE(machines.run.status == 0, "the guests failed:\n" << machines.run.output);

  // Who is what: m1 east's gateway, m2 a member routing through it, m3 west's gateway.
  BOOST_TEST(slurp(machines.file("join.m1")).find("DC east's gateway") != std::string::npos);
  BOOST_TEST(slurp(machines.file("join.m2")).find("through its gateway 10.99.0.1") != std::string::npos);
  BOOST_TEST(slurp(machines.file("join.m3")).find("DC west's gateway") != std::string::npos);
  // A gateway whose FORWARD policy drops (Docker's) is warned about; the policy stays.
  const std::string drop = slurp(machines.file("join-drop.m3"));
  BOOST_TEST(drop.find("wanlab join: warning: iptables-nft's FORWARD policy is DROP here") != std::string::npos, drop);
  BOOST_TEST(drop.find("iptables-nft -I FORWARD -i eth0 -o eth0 -j ACCEPT") != std::string::npos, drop);
  BOOST_TEST(drop.find("\n-P FORWARD DROP") != std::string::npos, drop);
  BOOST_TEST(slurp(machines.file("join.m1")).find("warning") == std::string::npos);
  const std::string member_stats = slurp(machines.file("stats.m2"));
  BOOST_TEST(member_stats.find("is a member of DC east, whose links its gateway 10.99.0.1 holds") != std::string::npos,
             member_stats);
  BOOST_TEST(member_stats.ends_with("exit 1\n"), member_stats);

  // RTT: the configured 30 ms on top of what the guests' own path took
  // before join (TCG: milliseconds, and varying), never below 30 ms.
  const double before_ms = median_rtt_ms(slurp(machines.file("ping-before.m1")));
  const double after_ms = median_rtt_ms(slurp(machines.file("ping-after.m1")));
  BOOST_TEST_MESSAGE("RTT m1 -> m3: " << before_ms << " ms before join, " << after_ms << " ms after (configured "
                                      << kRttMs << " ms)");
  BOOST_TEST(after_ms >= kRttMs);
  BOOST_TEST(after_ms <= kRttMs + 2 * before_ms + 6.5);

  // A machine alone gets the pair's rate, the gateway and a member alike;
  // two machines of one DC at once get it together, not twice it.
  const double gateway_alone = received_bps(machines.file("alone.m1.json"));
  const double member_alone = received_bps(machines.file("alone.m2.json"));
  const double together =
      received_bps(machines.file("together.m1.json")) + received_bps(machines.file("together.m2.json"));
  const double reverse = received_bps(machines.file("reverse.m2.json"));
  BOOST_TEST_MESSAGE("goodput east -> west, configured "
                     << kRateBps / 1e6 << " Mbit/s: gateway alone " << gateway_alone / 1e6 << ", member alone "
                     << member_alone / 1e6 << ", both at once " << together / 1e6 << " Mbit/s; west -> member "
                     << reverse / 1e6 << " Mbit/s");
  // The floors are low because three TCG guests share two host cores here:
  // at 20 Mbit/s one stream measured 63-88% of the rate in eight runs, and
  // 47% once on a busy CI host (hence 10 Mbit/s now). A gateway's own sender
  // without the detour (wanlab_tc.bpf.c) got 13%; one link per machine would
  // give both together twice the rate.
  for (double alone : {gateway_alone, member_alone, reverse}) {
    BOOST_TEST(alone >= 0.5 * kRateBps);
    BOOST_TEST(alone <= 1.05 * kRateBps);
  }
  BOOST_TEST(together >= 0.6 * kRateBps);
  BOOST_TEST(together <= 1.1 * kRateBps);

  // After down each machine's kernel is as before join: qdiscs, filters,
  // routes, sysctls, run directory, namespaces, programs, daemons.
  for (const std::string machine : {"m1", "m2", "m3"}) {
    const std::string before = slurp(machines.file("before." + machine));
    const std::string after = slurp(machines.file("after." + machine));
    BOOST_TEST(before == after, machine << " before join:\n" << before << "after down:\n" << after);
  }
}
