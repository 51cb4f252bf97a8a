// Schedules end to end: a testbed whose WAN rate follows a square-wave trace,
// real TCP across it, goodput counted at the receiver per 100 ms window of the
// schedule's own clock.

#include <sched.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "wanlab/base/clock.hpp"
#include "support/wanlab_cli.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/schedule.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/emulator/testbed.hpp"

using namespace wanlab;
namespace em = wanlab::emulator;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr const char* kName = "itrace";
constexpr std::uint64_t kHalfPeriodNs = 500 * kMs;
constexpr std::uint64_t kOneWayNs = 10 * kMs;
constexpr double kHighBps = 20e6, kLowBps = 8e6;

// 20 and 8 Mbit/s for 500 ms each; a deep queue keeps cubic's window above
// the high rate's BDP through the low half, so the link never idles.
const std::string kSquareWave = R"(
[defaults]
delay = "10ms"
rate = "20mbit"
queue = "4bdp"
schedule = { period = "1s", steps = [{ time = "0s", rate = "20mbit" }, { time = "500ms", rate = "8mbit" }] }
)";

const std::string kHosts = R"(
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "8mb"
tcp_rmem_max = "16mb"
[[dc]]
name = "east"
[[dc]]
name = "west"
)";

// The data plane's clock (base/clock.hpp), unsigned as its timestamps are.
std::uint64_t monotonic_ns() { return static_cast<std::uint64_t>(wanlab::base::monotonic_ns()); }

// Brings testbed `itrace` up from the WAN's tables and the hosts; always down.
struct Testbed {
  test::ScenarioFile file;
  em::TestbedState state;
  explicit Testbed(const std::string& wan, const std::string& hosts = kHosts)
      : file(kName, std::string("name = \"") + kName + "\"\n" + wan + hosts) {
    const auto up = test::wanlab({"up", file.path(), "--quiet", "--release", test::release_choice()});
    BOOST_TEST_REQUIRE(up.status == 0, up.output);
    state = em::load_state(kName);
  }
  ~Testbed() { test::wanlab({"down", kName}); }

  em::Endpoint endpoint(const std::string& host) const { return {state.host(host).netns, state.host(host).ipv4}; }
  // The schedule of east -> west as the data plane holds it.
  std::vector<wanlab_sched_entry> schedule() const {
    return em::Datapath::open_pinned(em::bpffs_dir(kName)).schedule(0, 1);
  }
  // The map each scheduled pair reads its schedule from.
  std::vector<em::Datapath::ScheduleMap> schedule_maps() const {
    return em::Datapath::open_pinned(em::bpffs_dir(kName)).schedule_maps();
  }
};

// A file in the temporary directory, removed with the object.
struct TempFile {
  std::filesystem::path path;
  TempFile(const std::string& name, const std::string& text)
      : path(std::filesystem::temp_directory_path() / ("wanlab-itrace-" + name)) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

// The first instant `period` after `origin` plus a whole number of periods
// that is at least `warmup` from now.
std::uint64_t next_aligned(std::uint64_t origin, std::uint64_t period, std::uint64_t warmup) {
  const std::uint64_t earliest = monotonic_ns() + warmup;
  return origin + (earliest - origin + period - 1) / period * period;
}

// The measuring side (the sender and receiver threads measure_goodput starts,
// which inherit this thread's policy) runs SCHED_FIFO while it lives, below
// the releaser's priority: on a 2-core machine shared with builds and other
// testbeds, their wake-ups are not the emulator's error.
struct MeasureAheadOfOtherWork {
  MeasureAheadOfOtherWork() {
    sched_param priority{};
    priority.sched_priority = 5;
    BOOST_TEST_REQUIRE(::sched_setscheduler(0, SCHED_FIFO, &priority) == 0);
  }
  ~MeasureAheadOfOtherWork() {
    sched_param normal{};
    ::sched_setscheduler(0, SCHED_OTHER, &normal);
  }
};

// The mean of `values` without the `share` highest and `share` lowest.
double trimmed_mean(std::vector<double> values, double share) {
  std::sort(values.begin(), values.end());
  const auto cut = static_cast<std::ptrdiff_t>(share * static_cast<double>(values.size()));
  return em::mean(std::vector<double>(values.begin() + cut, values.end() - cut));
}

void check_goodput_follows_the_square_wave() {
  Testbed bed(kSquareWave);
  const std::vector<wanlab_sched_entry> schedule = bed.schedule();
  BOOST_REQUIRE(schedule.size() == 3u);
  // Receiver time: the schedule's time plus the one-way delay. Windows start
  // one RTT after each edge reaches the receiver: four of 100 ms per half,
  // the fifth crosses the next edge. 3 s of warm-up (slow start, cubic
  // finding the queue), then 6 periods.
  const std::uint64_t rtt = 2 * kOneWayNs;
  em::GoodputOptions options;
  options.count_from_mono_ns = next_aligned(schedule[0].head.start_ns + kOneWayNs + rtt, 2 * kHalfPeriodNs, 3000 * kMs);
  options.seconds = 6;
  options.congestion = "cubic";
  const em::GoodputReport report = [&] {
    MeasureAheadOfOtherWork ahead;
    return em::measure_goodput(bed.endpoint("east-0"), bed.endpoint("west-0"), options, 0.1);
  }();

  std::vector<double> errors;
  std::map<bool, std::vector<double>> by_phase;  // high? -> measured / expected
  for (std::size_t w = 0; w < report.interval_bps.size(); ++w) {
    const std::uint64_t in_half = w * 100 * kMs % kHalfPeriodNs;
    if (in_half + 100 * kMs > kHalfPeriodNs - rtt) continue;
    const bool high = (w * 100 * kMs / kHalfPeriodNs) % 2 == 0;
    const double ratio = report.interval_bps[w] / ((high ? kHighBps : kLowBps) * em::kPayloadShare);
    BOOST_TEST_MESSAGE("window " << w << (high ? " high " : " low  ") << report.interval_bps[w] / 1e6 << " Mbit/s, "
                                 << 100 * (ratio - 1) << "% off, longest gap " << 1e3 * report.interval_max_gap_s[w]
                                 << " ms");
    errors.push_back(std::abs(ratio - 1));
    by_phase[high].push_back(ratio);
  }
  BOOST_TEST_REQUIRE(errors.size() == 48u);
  // Every window within 5% on a quiet machine. On a 2-core machine shared
  // with other testbeds' releasers (SCHED_FIFO like ours) and builds, the
  // host sometimes runs neither the sender, the releaser nor the receiver for
  // tens of ms, and a window loses or gains that much: three in four within
  // 5%, the median within 2% (one 1514-byte packet more or less is 1.5% of a
  // window at 8 Mbit/s), and each phase's mean within 5% once its highest and
  // lowest tenth are set aside. A stall's catch-up lands in the next window,
  // or in a window skipped at an edge, so an untrimmed mean moved 5.6% in CI
  // with the rate right (here: -69.7% then +69.6%, and -47% whose catch-up
  // crossed the edge); a wrong rate moves every window, trimmed or not.
  const auto within = std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 0.05; });
  BOOST_TEST(within * 4 >= static_cast<long>(errors.size()) * 3,
             within << " of " << errors.size() << " windows within 5%");
  BOOST_TEST(em::median(errors) <= 0.02);
  for (const auto& [high, ratios] : by_phase) {
    BOOST_TEST_INFO((high ? "high" : "low") << " phase");
    BOOST_TEST(std::abs(trimmed_mean(ratios, 0.1) - 1) <= 0.05);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(goodput_follows_a_square_wave_rate_trace) {
  check_goodput_follows_the_square_wave();
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}

// Delay 10 ms for the first second of every two, 40 ms for the second; echoes
// every 50 ms, those sent 100 ms or more from an edge checked.
BOOST_AUTO_TEST_CASE(rtt_follows_a_delay_trace) {
  {
    Testbed bed(R"(
[defaults]
delay = "5ms"
schedule = { period = "2s", steps = [{ time = "0s", delay = "10ms" }, { time = "1s", delay = "40ms" }] }
)");
    const std::uint64_t start = bed.schedule()[0].head.start_ns;
    // [defaults]' schedule is one map for both pairs.
    const auto maps = bed.schedule_maps();
    BOOST_REQUIRE(maps.size() == 2u);
    BOOST_TEST(maps[0].id == maps[1].id);
    const auto echoes = [&] {
      MeasureAheadOfOtherWork ahead;
      return em::measure_echoes_paced(bed.endpoint("east-0"), bed.endpoint("west-0"), 100, 50);
    }();
    BOOST_TEST_REQUIRE(echoes.size() >= 95u);
    // Never below the trace; at most the usual slack above it, the median of
    // each phase always and nine echoes in ten (a loaded machine delays some).
    std::map<double, std::vector<double>> by_phase;
    for (std::size_t i = 0; i < echoes.size(); ++i) {
      const std::uint64_t in_period = (echoes[i].sent_mono_ns - start) % (2000 * kMs);
      const std::uint64_t in_half = in_period % (1000 * kMs);
      if (in_half < 100 * kMs || in_half > 900 * kMs) continue;
      const double configured = in_period < 1000 * kMs ? 20.0 : 80.0;
      BOOST_TEST_INFO("echo " << i << " sent " << in_period / kMs << " ms into the period");
      BOOST_TEST(echoes[i].network_rtt_ms() >= configured);
      by_phase[configured].push_back(echoes[i].network_rtt_ms());
    }
    int checked = 0, within = 0;
    for (const auto& [configured, rtts] : by_phase) {
      BOOST_TEST_INFO("configured " << configured << " ms");
      BOOST_TEST(em::median(rtts) <= test::rtt_upper_ms(configured));
      for (double rtt : rtts) within += rtt <= test::rtt_upper_ms(configured);
      checked += static_cast<int>(rtts.size());
    }
    BOOST_TEST(by_phase.size() == 2u);
    BOOST_TEST(within >= checked * 9 / 10, within << " of " << checked);
    BOOST_TEST(checked >= 50);
  }
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}

// Opportunities 1, 2, 3, 0, 1, ... per millisecond for about a second: about
// 18 Mbit/s on average, with pauses; goodput over 8 s within 2% of the mean.
BOOST_AUTO_TEST_CASE(a_mahimahi_traces_mean_rate_is_met) {
  std::string lines;
  for (int ms = 1; ms <= 1000; ++ms)
    for (int n = 0; n < ms % 4; ++n) lines += std::to_string(ms) + "\n";
  const TempFile trace("cell.up", lines);
  {
    Testbed bed("[defaults]\ndelay = \"10ms\"\nqueue = \"50ms\"\nschedule = { mahimahi = \"" + trace.path.string() +
                "\" }\n");
    em::GoodputOptions options;
    options.seconds = 8;
    options.warmup_seconds = 2;
    options.congestion = "cubic";
    const double goodput = em::measure_goodput_bps(bed.endpoint("east-0"), bed.endpoint("west-0"), options);
    const double expected = em::parse_mahimahi_trace(lines, "cell.up", kMs).mean_rate_bps() * em::kPayloadShare;
    BOOST_TEST(std::abs(goodput / expected - 1) <= 0.02, goodput / 1e6 << " Mbit/s, expected " << expected / 1e6);
  }
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}

// `wanlab set` loads a schedule live and removes it; `wanlab stats` shows the
// rate it sets beside the measured one.
BOOST_AUTO_TEST_CASE(set_loads_a_schedule_live_and_stats_shows_its_rate) {
  const TempFile csv("live.csv", "time,rate\n0s,30mbit\n100s,10mbit\n");
  {
    Testbed bed("[defaults]\ndelay = \"5ms\"\nrate = \"50mbit\"\n");
    auto rate_set = [&] {
      const auto stats = test::wanlab({"stats", "--testbed", kName, "--json", "--interval", "0.05"});
      BOOST_TEST_REQUIRE(stats.status == 0, stats.output);
      return test::json_number(test::json_object_with(stats.output, {{"from", "east"}, {"to", "west"}}),
                               "rate_set_bps");
    };
    BOOST_TEST(rate_set() == 50e6);
    const auto set =
        test::wanlab({"set", "east", "west", "--testbed", kName, "--one-way", "--schedule", csv.path.string()});
    BOOST_TEST_REQUIRE(set.status == 0, set.output);
    BOOST_TEST(set.output.find("schedule of 2 steps from now") != std::string::npos, set.output);
    BOOST_TEST(rate_set() == 30e6);
    BOOST_TEST(bed.schedule().size() == 3u);
    BOOST_TEST(em::Datapath::open_pinned(em::bpffs_dir(kName)).schedule(1, 0).empty());  // one way
    const auto bad = test::wanlab({"set", "east", "west", "--testbed", kName, "--period", "1s"});
    BOOST_TEST(bad.status == 2);
    BOOST_TEST(bad.output.find("--period: only with --schedule") != std::string::npos, bad.output);
    const auto off = test::wanlab({"set", "east", "west", "--testbed", kName, "--no-schedule"});
    BOOST_TEST_REQUIRE(off.status == 0, off.output);
    BOOST_TEST(bed.schedule().empty());
    BOOST_TEST(rate_set() == 50e6);
  }
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// A live schedule is a change in changes.toml, with a copy of its trace, so
// the scenario as it runs now has the pair scheduled even after the file is
// gone; a replacement or --no-schedule supersedes it, and its copy goes.
BOOST_AUTO_TEST_CASE(a_live_schedule_is_recorded_in_changes_toml) {
  const std::string changes = em::run_dir(kName) + "/changes.toml";
  const std::string copies = em::run_dir(kName) + "/schedules";
  {
    Testbed bed("[defaults]\ndelay = \"5ms\"\nrate = \"50mbit\"\n");
    {
      const TempFile csv("recorded.csv", "time,rate\n0s,30mbit\n100s,10mbit\n");
      const auto set = test::wanlab({"set", "east", "west", "--testbed", kName, "--one-way", "--schedule",
                                     csv.path.string(), "--period", "200s"});
      BOOST_TEST_REQUIRE(set.status == 0, set.output);
    }  // the file given to `set` is gone from here on
    const std::string recorded = read_text(changes);
    BOOST_TEST(recorded.find("period = '200s'") != std::string::npos, recorded);
    BOOST_TEST(count_of(recorded, "schedules/") == 1u, recorded);
    const auto now = em::current_scenario(bed.state, em::ScheduleFiles::read);
    BOOST_TEST_REQUIRE(now.schedule(0, 1) != nullptr);
    BOOST_TEST(now.schedule(0, 1)->steps.size() == 2u);
    BOOST_TEST(now.schedule(0, 1)->steps[0].rate_bps == 30'000'000u);
    BOOST_TEST(now.schedule(0, 1)->period_ns == 200'000 * kMs);
    BOOST_TEST(now.schedule(1, 0) == nullptr);  // one way

    // Link keys leave the schedule (and its record) in place.
    const auto rate = test::wanlab({"set", "east", "west", "--testbed", kName, "--rate", "40mbit"});
    BOOST_TEST_REQUIRE(rate.status == 0, rate.output);
    BOOST_TEST(em::current_scenario(bed.state, em::ScheduleFiles::read).schedule(0, 1) != nullptr);
    BOOST_TEST(bed.schedule().size() == 3u);

    // A replacement supersedes the record both ways; its copy is the only one.
    const TempFile up("recorded.up", "1\n2\n");
    const auto mahimahi = test::wanlab({"set", "east", "west", "--testbed", kName, "--mahimahi", up.path.string()});
    BOOST_TEST_REQUIRE(mahimahi.status == 0, mahimahi.output);
    const std::string replaced = read_text(changes);
    BOOST_TEST(count_of(replaced, "schedules/") == 1u, replaced);
    BOOST_TEST(replaced.find("resolution = '1ms'") != std::string::npos, replaced);
    BOOST_TEST(std::distance(std::filesystem::directory_iterator(copies), {}) == 1);
    const auto both = em::current_scenario(bed.state, em::ScheduleFiles::read);
    BOOST_TEST((both.schedule(0, 1) != nullptr && both.schedule(1, 0) != nullptr));
    const auto maps = bed.schedule_maps();  // both directions: one map
    BOOST_REQUIRE(maps.size() == 2u);
    BOOST_TEST(maps[0].id == maps[1].id);

    const auto off = test::wanlab({"set", "east", "west", "--testbed", kName, "--no-schedule"});
    BOOST_TEST_REQUIRE(off.status == 0, off.output);
    const std::string removed = read_text(changes);
    BOOST_TEST(removed.find("schedules/") == std::string::npos, removed);
    BOOST_TEST(removed.find("no_schedule = true") != std::string::npos, removed);
    BOOST_TEST(removed.find("rate = '40mbit'") != std::string::npos, removed);
    BOOST_TEST(std::filesystem::is_empty(copies));
    const auto none = em::current_scenario(bed.state, em::ScheduleFiles::read);
    BOOST_TEST((none.schedule(0, 1) == nullptr && none.schedule(1, 0) == nullptr));
    BOOST_TEST(none.pair(0, 1).rate_bps == 40'000'000u);
    BOOST_TEST(bed.schedule().empty());
  }
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}

// `wanlab verify` compares a scheduled pair with its schedule's step now (not
// its base settings), and does not measure one whose schedule changes during
// the measurement.
BOOST_AUTO_TEST_CASE(verify_checks_a_scheduled_pair_against_its_step_now) {
  const TempFile csv("flip.csv", "time,delay\n0s,5ms\n100ms,20ms\n");
  {
    Testbed bed(R"(
[defaults]
delay = "5ms"
rate = "50mbit"
schedule = { steps = [{ time = "0s", delay = "25ms" }, { time = "1000s", delay = "5ms" }] }
)");
    const auto held = test::wanlab({"verify", "--testbed", kName});
    BOOST_TEST(held.status == 0, held.output);
    BOOST_TEST(held.output.find("50.02 ms") != std::string::npos, held.output);  // 2 x 25 ms and the probe at 50 Mbit/s
    BOOST_TEST(held.output.find("the schedule's step now") != std::string::npos, held.output);
    BOOST_TEST(held.output.find("every pair within its bounds") != std::string::npos, held.output);
    const auto flip = test::wanlab(
        {"set", "east", "west", "--testbed", kName, "--one-way", "--schedule", csv.path.string(), "--period", "200ms"});
    BOOST_TEST_REQUIRE(flip.status == 0, flip.output);
    // The only pair cannot be measured: nothing was, and that is no pass.
    const auto flipping = test::wanlab({"verify", "--testbed", kName});
    BOOST_TEST(flipping.status == 1, flipping.output);
    BOOST_TEST(flipping.output.find("not measured: its schedule changes") != std::string::npos, flipping.output);
    BOOST_TEST(flipping.output.find("wanlab verify: verify failed: no pair could be measured: east <-> west rtt: its "
                                    "schedule changes") != std::string::npos,
               flipping.output);
    BOOST_TEST(flipping.output.find("every pair within its bounds") == std::string::npos, flipping.output);
  }
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}

// `wanlab set` refused the change: exit 2, its one line first (then the usage).
void check_refused(const test::CliResult& set, const std::string& line) {
  BOOST_TEST(set.status == 2, set.output);
  BOOST_TEST(set.output.find("wanlab set: " + line + "\n") == 0u, set.output);
}

// A live change at which a schedule as the data plane holds it would never
// let the link send is refused before anything changes: a rate that a
// share-only schedule leaves nothing of, or such a schedule on a pair whose
// rate is that low. Exit 2, the option named.
BOOST_AUTO_TEST_CASE(set_refuses_a_rate_or_schedule_at_which_the_link_never_sends) {
  const TempFile half("half.csv", "time,share\n0s,50%\n");
  {
    Testbed bed(
        "[defaults]\ndelay = \"5ms\"\nrate = \"50mbit\"\n"
        "[[link]]\nfrom = \"east\"\nto = \"west\"\n"
        "schedule = { steps = [{ time = \"0s\", share = \"50%\" }] }\n");
    const std::string changes = em::run_dir(kName) + "/changes.toml";
    check_refused(test::wanlab({"set", "east", "west", "--testbed", kName, "--rate", "1bit"}),
                  "--rate: east -> west: its schedule: the link never sends: every step pauses it (this one: the "
                  "link's rate 1bit less a share of 50% leaves less than 1 bit/s)");
    BOOST_TEST(!std::filesystem::exists(changes));
    BOOST_TEST(em::current_scenario(bed.state).pair(0, 1).rate_bps == 50'000'000u);
    // The other direction has no schedule: 1 bit/s is its to have.
    const auto other = test::wanlab({"set", "west", "east", "--one-way", "--testbed", kName, "--rate", "1bit"});
    BOOST_TEST(other.status == 0, other.output);
    check_refused(
        test::wanlab({"set", "west", "east", "--one-way", "--testbed", kName, "--schedule", half.path.string()}),
        "--schedule: " + half.path.string() +
            ": west -> east: the link never sends: every step pauses it (this one: the link's rate 1bit less a share "
            "of 50% leaves less than 1 bit/s)");
    BOOST_TEST(bed.schedule_maps().size() == 1u);
  }
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}

// Mahimahi traces that alternate every millisecond: `steps` steps each.
std::string alternating_trace(std::uint64_t steps) {
  std::string text;
  for (std::uint64_t ms = 2; ms <= steps; ms += 2) text += std::to_string(ms) + "\n";
  return text;
}

// The testbed's schedule maps are bounded in all (kMaxTestbedScheduleSteps):
// a live schedule that would take them past it is refused, saying the total
// and the limit; one that replaces a pair's own counts in its place.
BOOST_AUTO_TEST_CASE(live_schedules_are_bounded_in_all) {
  const std::uint64_t steps = 3'000'000;
  const TempFile first("a.up", alternating_trace(steps)), second("b.up", alternating_trace(steps + 2)),
      third("c.up", alternating_trace(steps + 4));
  {
    Testbed bed("[defaults]\ndelay = \"5ms\"\nrate = \"50mbit\"\n",
                "[[dc]]\nname = \"east\"\n[[dc]]\nname = \"west\"\n[[dc]]\nname = \"south\"\n");
    auto set = [&](const std::string& from, const std::string& to, const TempFile& trace) {
      return test::wanlab({"set", from, to, "--one-way", "--testbed", kName, "--mahimahi", trace.path.string()});
    };
    const auto a = set("east", "west", first);
    BOOST_TEST_REQUIRE(a.status == 0, a.output);
    const auto b = set("west", "east", second);
    BOOST_TEST_REQUIRE(b.status == 0, b.output);
    check_refused(set("east", "south", third), "--mahimahi: " + third.path.string() +
                                                   ": the testbed's schedules come to 9000006 steps (274 MiB of "
                                                   "maps), more than 8388608 (256 MiB) for one testbed");
    BOOST_TEST(bed.schedule_maps().size() == 2u);
    // In east -> west's place: 6,000,006 steps.
    const auto replaced = set("east", "west", third);
    BOOST_TEST(replaced.status == 0, replaced.output);
    const auto maps = bed.schedule_maps();
    BOOST_REQUIRE(maps.size() == 2u);
    BOOST_TEST(maps[0].head.steps == steps + 4);
  }
  BOOST_TEST(test::leftovers(kName).empty(), test::leftovers(kName));
}
