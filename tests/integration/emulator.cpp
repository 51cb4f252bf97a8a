// The emulator end to end, as a user drives it: the real `wanlab` binary, real
// namespaces, the real tc program and release path, real TCP and UDP.
#include <signal.h>
#include <sys/wait.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <thread>

#include "support/wanlab_cli.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/testbed.hpp"

using namespace wanlab;
using namespace std::chrono_literals;
namespace em = wanlab::emulator;
namespace base = wanlab::base;

namespace {

const char* kTwoDc = R"(
name = "itest"
[defaults]
delay = "20ms"
rate = "100mbit"
queue = "1bdp"
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "8mb"
tcp_rmem_max = "16mb"
tcp_slow_start_after_idle = false
[[dc]]
name = "east"
hosts = 2
[[dc]]
name = "west"
hosts = 1
)";

// Brings a testbed up through the CLI and always takes it down.
struct Testbed {
  explicit Testbed(const std::string& text, const std::vector<std::string>& extra = {}) : file("itest", text) {
    std::vector<std::string> args{"up", file.path(), "--quiet", "--release", test::release_choice()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto up = test::wanlab(args);
    BOOST_TEST_REQUIRE(up.status == 0, up.output);
    state = em::load_state("itest");
  }
  ~Testbed() { test::wanlab({"down", "itest"}); }

  em::Endpoint endpoint(const std::string& host) const {
    const auto& h = state.host(host);
    return {h.netns, h.ipv4};
  }

  test::ScenarioFile file;
  em::TestbedState state;
};

double median_rtt(const Testbed& bed, const std::string& a, const std::string& b, int count = 20) {
  const auto rtts = em::measure_rtt_ms(bed.endpoint(a), bed.endpoint(b), count, 10);
  BOOST_TEST_REQUIRE(rtts.size() >= static_cast<size_t>(count * 9 / 10));
  return em::median(rtts);
}

// median_rtt for a check against rtt_upper_ms(configured_ms) (test::least_median_ms).
double path_rtt(const Testbed& bed, const std::string& a, const std::string& b, double configured_ms) {
  return test::least_median_ms([&] { return median_rtt(bed, a, b); }, test::rtt_upper_ms(configured_ms));
}

}  // namespace

BOOST_AUTO_TEST_CASE(rtt_between_dcs_is_twice_the_one_way_delay) {
  Testbed bed(kTwoDc);
  const double rtt = path_rtt(bed, "east-0", "west-0", 40.0);
  BOOST_TEST(rtt >= 40.0);
  BOOST_TEST(rtt <= test::rtt_upper_ms(40.0));
  // Hosts of one DC see the intra-DC delay (none here), not the WAN's.
  BOOST_TEST(median_rtt(bed, "east-0", "east-1") < 2.0);
}

BOOST_AUTO_TEST_CASE(tcp_goodput_is_close_to_the_configured_rate) {
  Testbed bed(kTwoDc);
  em::GoodputOptions options;
  options.seconds = 4;
  options.warmup_seconds = 1.5;
  options.congestion = "cubic";
  const double goodput = em::measure_goodput_bps(bed.endpoint("east-0"), bed.endpoint("west-0"), options);
  BOOST_TEST_MESSAGE("goodput " << goodput / 1e6 << " Mbit/s of 100");
  // Under TCG one emulated CPU carries sender, receiver and both stacks, and
  // has measured 80-96 Mbit/s here: the floor drops to 75%. The ceiling,
  // the shaper's part, stays.
  BOOST_TEST(goodput > (test::under_tcg() ? 75e6 : 85e6));
  BOOST_TEST(goodput < 101e6);
}

BOOST_AUTO_TEST_CASE(set_changes_rtt_live_and_stats_show_drops) {
  Testbed bed(kTwoDc);
  BOOST_TEST(path_rtt(bed, "east-0", "west-0", 40.0) <= test::rtt_upper_ms(40.0));

  const auto set = test::wanlab({"set", "east", "west", "--delay", "40ms", "--testbed", "itest"});
  BOOST_TEST_REQUIRE(set.status == 0, set.output);
  const double rtt = path_rtt(bed, "east-0", "west-0", 80.0);
  BOOST_TEST(rtt >= 80.0);
  BOOST_TEST(rtt <= test::rtt_upper_ms(80.0));

  // Loss: 20% each way loses about 36% of echoes.
  BOOST_TEST_REQUIRE(
      test::wanlab({"set", "east", "west", "--loss", "20%", "--delay", "1ms", "--testbed", "itest"}).status == 0);
  const auto survived = em::measure_rtt_ms(bed.endpoint("east-0"), bed.endpoint("west-0"), 200, 1);
  BOOST_TEST(survived.size() > 90u);
  BOOST_TEST(survived.size() < 170u);

  // Overflow: a 2 ms queue at 100 Mbit/s cannot hold TCP's bursts.
  BOOST_TEST_REQUIRE(
      test::wanlab({"set", "east", "west", "--loss", "0%", "--queue", "2ms", "--testbed", "itest"}).status == 0);
  em::GoodputOptions options;
  options.seconds = 1;
  options.warmup_seconds = 0;
  em::measure_goodput_bps(bed.endpoint("east-0"), bed.endpoint("west-0"), options);

  const auto stats = test::wanlab({"stats", "--json", "--interval", "0.2", "--testbed", "itest"});
  BOOST_TEST_REQUIRE(stats.status == 0, stats.output);
  const auto east_west = test::json_object_with(stats.output, {{"from", "east"}, {"to", "west"}});
  BOOST_TEST_REQUIRE(!east_west.is_null(), stats.output);
  BOOST_TEST(test::json_number(east_west, "drops_loss") > 20, east_west);
  BOOST_TEST(test::json_number(east_west, "drops_queue") > 0, east_west);
  BOOST_TEST(test::json_number(east_west, "packets") > 100, east_west);
  // On the nfqueue path the releaser counts its verdicts per DC pair too
  // (published each second: looked for until the transfer's are in).
  if (em::load_state("itest").release == em::ReleasePath::nfqueue) {
    std::string last;
    const bool counted = test::eventually([&] {
      last = test::wanlab({"stats", "--json", "--interval", "0.05", "--testbed", "itest"}).output;
      const auto released = test::json_object_with(last, {{"from", "east"}, {"to", "west"}, {"late_max_ns", nullptr}});
      return !released.is_null() && test::json_number(released, "packets") > 100;
    });
    BOOST_TEST(counted, last);
  }

  // Gilbert-Elliott through `set` (every link key is an option): P(good -> bad)
  // 100% and --ge-r 0% keep the pair in the bad state, which loses everything;
  // with the built-in ge_r of 100% every other packet would come through.
  const auto ge =
      test::wanlab({"set", "east", "west", "--queue", "1bdp", "--loss-model", "gilbert-elliott", "--loss", "100%",
                    "--ge-r", "0%", "--ge-bad-loss", "100%", "--ge-good-loss", "0%", "--testbed", "itest"});
  BOOST_TEST_REQUIRE(ge.status == 0, ge.output);
  BOOST_TEST(em::measure_rtt_ms(bed.endpoint("east-0"), bed.endpoint("west-0"), 20, 1).empty());
  BOOST_TEST_REQUIRE(test::wanlab({"set", "east", "west", "--ge-r", "100%", "--loss-model", "bernoulli", "--loss", "0%",
                                   "--testbed", "itest"})
                         .status == 0);
  BOOST_TEST(em::measure_rtt_ms(bed.endpoint("east-0"), bed.endpoint("west-0"), 20, 1).size() == 20u);
}

// A `set` a second for hours must not make each `set` slower: a change that
// later ones wholly override is dropped from changes.toml, and the settings
// stay those of every change applied in order.
BOOST_AUTO_TEST_CASE(set_drops_overridden_changes_and_keeps_the_settings_of_all) {
  Testbed bed(kTwoDc);
  em::Scenario every = em::load_scenario(bed.file.path());
  for (int round = 0; round < 30; ++round) {
    const std::string n = std::to_string(round % 7 + 1);
    const std::vector<std::vector<std::string>> sets = {
        {"east", "west", "--rate", n + "0mbit", "--delay", n + "ms"},
        {"west", "east", "--delay", n + "3ms", "--one-way"},
        {"east", "west", "--loss", n + "%"},
        {"east", "west", "--rate", n + "5mbit", "--jitter", n + "00us", "--one-way"},
        {"east", "west", "--queue", n + "0ms"}};
    for (const auto& change : sets) {
      std::vector<std::string> args = {"set", "--testbed", "itest"};
      args.insert(args.end(), change.begin(), change.end());
      const auto set = test::wanlab(args);
      BOOST_TEST_REQUIRE(set.status == 0, set.output);
      em::LinkSpec spec;
      spec.from = change[0];
      spec.to = change[1];
      spec.symmetric = change.back() != "--one-way";
      for (std::size_t i = 2; i + 1 < change.size(); i += 2)
        spec.params = em::parse_link_option(spec.params, change[i].substr(2), change[i + 1]);
      every.links.push_back(spec);
    }
  }
  // Left: the last round's five changes, each still the latest for something.
  const std::string changes = base::read_regular_file(em::run_dir("itest") + "/changes.toml");
  std::size_t entries = 0;
  for (std::size_t at = changes.find("[[change]]"); at != std::string::npos; at = changes.find("[[change]]", at + 1))
    ++entries;
  BOOST_TEST(entries == 5u, changes);
  const em::Scenario now = em::current_scenario(bed.state);
  for (const auto& [src, dst] : {std::pair{0, 1}, std::pair{1, 0}}) {
    const em::PairParams got = now.pair(src, dst), want = every.pair(src, dst);
    BOOST_TEST(got.rate_bps == want.rate_bps);
    BOOST_TEST(got.delay_ns == want.delay_ns);
    BOOST_TEST(got.jitter_ns == want.jitter_ns);
    BOOST_TEST(got.loss == want.loss);
    BOOST_TEST(got.queue.value == want.queue.value);
  }
  // The last round (n = 2): east -> west 25mbit one way after 20mbit both ways; west -> east 23 ms one way after 2 ms.
  BOOST_TEST(now.pair(0, 1).rate_bps == 25'000'000u);
  BOOST_TEST(now.pair(1, 0).rate_bps == 20'000'000u);
  BOOST_TEST(now.pair(1, 0).delay_ns == 23'000'000u);
  BOOST_TEST(now.pair(0, 1).delay_ns == 2'000'000u);
}

BOOST_AUTO_TEST_CASE(events_change_links_on_time_and_host_settings_apply) {
  // Late enough that the first probes end before it: under TCG ten probes
  // took more than 1.5 s once, and measured the link after the event.
  const auto event_at = test::under_tcg() ? 6000ms : 1500ms;
  Testbed bed(std::string(kTwoDc) + "\n[[event]]\nat = \"" + std::to_string(event_at.count()) +
              "ms\"\nbetween = [\"east\", \"west\"]\ndelay = \"5ms\"\n");
  BOOST_TEST(median_rtt(bed, "east-0", "west-0", 10) > 39.0);
  std::this_thread::sleep_for(event_at);
  const double after = path_rtt(bed, "east-0", "west-0", 10.0);
  BOOST_TEST(after >= 10.0);
  BOOST_TEST(after <= test::rtt_upper_ms(10.0));

  const auto cc =
      test::wanlab({"exec", "west-0", "--testbed", "itest", "--", "cat", "/proc/sys/net/ipv4/tcp_congestion_control"});
  BOOST_TEST(cc.status == 0);
  BOOST_TEST(cc.output == "cubic\n");
  const auto wmem = test::wanlab({"exec", "west-0", "--testbed", "itest", "--", "cat", "/proc/sys/net/ipv4/tcp_wmem"});
  BOOST_TEST(wmem.output.find("8388608") != std::string::npos, wmem.output);
  const auto idle = test::wanlab(
      {"exec", "west-0", "--testbed", "itest", "--", "cat", "/proc/sys/net/ipv4/tcp_slow_start_after_idle"});
  BOOST_TEST(idle.output == "0\n", idle.output);
}

BOOST_AUTO_TEST_CASE(hosts_json_lists_every_host) {
  Testbed bed(kTwoDc);
  const auto hosts = test::wanlab({"hosts", "--json", "--testbed", "itest"});
  BOOST_TEST_REQUIRE(hosts.status == 0, hosts.output);
  for (const char* name : {"east-0", "east-1", "west-0"})
    BOOST_TEST(hosts.output.find(std::string("\"") + name + "\"") != std::string::npos, hosts.output);
  BOOST_TEST(hosts.output.find("\"ipv4\"") != std::string::npos);
  const auto unknown = test::wanlab({"exec", "north-0", "--testbed", "itest", "--", "true"});
  BOOST_TEST(unknown.status == 1);
  BOOST_TEST(unknown.output.find("no host \"north-0\"") != std::string::npos, unknown.output);
}

BOOST_AUTO_TEST_CASE(run_returns_the_command_exit_code_and_cleans_up) {
  test::ScenarioFile file("itest", kTwoDc);
  const int programs_before = test::wanlab_programs_loaded();
  const auto ok = test::wanlab({"run", file.path(), "--quiet", "--release", test::release_choice(), "--",
                                test::wanlab_bin(), "exec", "east-0", "--", "true"});
  BOOST_TEST(ok.status == 0, ok.output);
  const auto seven =
      test::wanlab({"run", file.path(), "--quiet", "--release", test::release_choice(), "--", "sh", "-c", "exit 7"});
  BOOST_TEST(seven.status == 7, seven.output);
  BOOST_TEST(test::leftovers("itest").empty(), test::leftovers("itest"));
  BOOST_TEST(test::eventually([&] { return test::wanlab_programs_loaded() <= programs_before; }));
}

BOOST_AUTO_TEST_CASE(down_leaves_nothing_also_with_processes_running_on_hosts) {
  const int programs_before = test::wanlab_programs_loaded();
  test::Started server;
  {
    Testbed bed(kTwoDc);
    // A program left running on a host must not survive the testbed.
    server = test::start_wanlab({"exec", "west-0", "--testbed", "itest", "--", "sleep", "600"});
    BOOST_TEST_REQUIRE(test::eventually([&] { return !emulator::netns_pids(bed.state.host("west-0").netns).empty(); }));
  }
  std::optional<int> status;
  BOOST_TEST(test::eventually([&] { return (status = server.child.try_wait()).has_value(); }, 5000ms));
  BOOST_TEST(status.value_or(0) > 128, "exit code " << status.value_or(-1) << " (128 + signal when killed)");
  BOOST_TEST(test::leftovers("itest").empty(), test::leftovers("itest"));
  BOOST_TEST(test::eventually([&] { return test::wanlab_programs_loaded() <= programs_before; }));
}

BOOST_AUTO_TEST_CASE(killed_up_is_cleaned_by_down_and_interrupted_up_cleans_itself) {
  // Many DCs make `up` slow enough to be stopped midway.
  std::string big = "name = \"itest\"\n[defaults]\ndelay = \"1ms\"\n";
  for (int i = 0; i < 40; ++i) big += "[[dc]]\nname = \"dc" + std::to_string(i) + "\"\nhosts = 1\n";
  test::ScenarioFile file("itest", big);
  const int programs_before = test::wanlab_programs_loaded();

  for (int sig : {SIGKILL, SIGTERM}) {
    test::Started up = test::start_wanlab({"up", file.path(), "--release", test::release_choice()});
    BOOST_TEST_REQUIRE(test::eventually([] { return emulator::list_netns("wanlab-itest.").size() >= 3; }));
    ::kill(up.child.pid(), sig);
    const std::string said = test::read_to_eof(up.output.get());
    up.child.wait();
    if (sig == SIGKILL) {
      BOOST_TEST(!test::leftovers("itest").empty());  // nothing could clean up yet
      // By name: --all would also take down testbeds this test did not make.
      const auto down = test::wanlab({"down", "itest"});
      BOOST_TEST(down.status == 0, down.output);
    } else {
      BOOST_TEST(said.find("interrupted") != std::string::npos, said);
    }
    BOOST_TEST(test::leftovers("itest").empty(), test::leftovers("itest"));
    BOOST_TEST(test::eventually([&] { return test::wanlab_programs_loaded() <= programs_before; }));
  }
}

BOOST_AUTO_TEST_CASE(bad_scenario_is_refused_with_its_position_and_creates_nothing) {
  test::ScenarioFile file("itest",
                          std::string(kTwoDc) + "\n[[link]]\nbetween = [\"east\", \"mars\"]\ndelay = \"5ms\"\n");
  const auto up = test::wanlab({"up", file.path()});
  BOOST_TEST(up.status == 1);
  BOOST_TEST(up.output.find(file.path() + ":") != std::string::npos, up.output);
  BOOST_TEST(up.output.find("mars") != std::string::npos, up.output);
  BOOST_TEST(test::leftovers("itest").empty());
}

// The fq release path needs sch_fq. Where the kernel lacks it (this project's
// CI machine), asking for it must fail loudly and leave nothing: that is what
// runs there. Where the kernel has it (Debian's, in vm.emulator), the path must
// hold the configured RTT. Which of the two runs follows from the kernel,
// asked through iproute2, not from wanlab's own answer.
BOOST_AUTO_TEST_CASE(fq_release_path_holds_the_rtt_with_sch_fq_and_is_refused_loudly_without) {
  test::ScenarioFile file("itest", kTwoDc);
  const bool has_fq = test::kernel_has_sch_fq();
  const auto up = test::wanlab({"up", file.path(), "--quiet", "--release", "fq"});
  if (!has_fq) {
    BOOST_TEST(up.status == 1, up.output);
    BOOST_TEST(up.output.find("--release fq: the kernel has no sch_fq") != std::string::npos, up.output);
    BOOST_TEST(test::leftovers("itest").empty(), test::leftovers("itest"));
    BOOST_TEST_MESSAGE("no sch_fq in this kernel: checked the refusal; the fq path's RTT is checked in vm.emulator");
    return;
  }
  BOOST_TEST_REQUIRE(up.status == 0, up.output);
  struct Down {
    ~Down() { test::wanlab({"down", "itest"}); }
  } down;
  const auto state = em::load_state("itest");
  BOOST_TEST(em::to_string(state.release) == "fq");
  const auto& a = state.host("east-0");
  const auto& b = state.host("west-0");
  const double rtt = test::least_median_ms(
      [&] {
        return em::median(em::measure_rtt_ms({a.netns, a.ipv4}, {b.netns, b.ipv4}, 20, 10));
      },
      test::rtt_upper_ms(40.0));
  BOOST_TEST_MESSAGE("fq path: median RTT " << rtt << " ms, configured 40 ms");
  BOOST_TEST(rtt >= 40.0);
  BOOST_TEST(rtt <= test::rtt_upper_ms(40.0));
}

// Hosts are dual-stack; the program classifies IPv6 by the DCs' /64s.
BOOST_AUTO_TEST_CASE(ipv6_is_emulated_like_ipv4) {
  Testbed bed(kTwoDc);
  const auto ping = test::wanlab({"exec", "east-0", "--testbed", "itest", "--", "ping", "-6", "-U", "-n", "-q", "-c",
                                  "10", "-i", "0.05", "fd77:0:0:1::1"});
  BOOST_TEST_REQUIRE(ping.status == 0, ping.output);
  const auto at = ping.output.find("rtt min/avg/max/mdev = ");
  BOOST_TEST_REQUIRE(at != std::string::npos, ping.output);
  const double min_rtt = std::stod(ping.output.substr(at + 23));
  BOOST_TEST(min_rtt >= 40.0);
  BOOST_TEST(min_rtt <= test::rtt_upper_ms(40.0));
}
