// Schedules end to end: a testbed whose WAN rate follows a square-wave trace,
// real TCP across it, goodput counted at the receiver per 100 ms window of the
// schedule's own clock.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "support/wanlab_cli.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/netns.hpp"
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
constexpr double kHighBps = 50e6, kLowBps = 20e6;

// 50 and 20 Mbit/s for 500 ms each; a deep queue keeps cubic's window above
// the high rate's BDP through the low half, so the link never idles.
const std::string kSquareWave = R"(
[defaults]
delay = "10ms"
rate = "50mbit"
queue = "4bdp"
schedule = { period = "1s", steps = [{ time = "0s", rate = "50mbit" }, { time = "500ms", rate = "20mbit" }] }
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

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Brings testbed `itrace` up from the WAN's tables and the hosts; always down.
struct Testbed {
  test::ScenarioFile file;
  em::TestbedState state;
  explicit Testbed(const std::string& wan) : file(kName, std::string("name = \"") + kName + "\"\n" + wan + kHosts) {
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

// What one TCP stream delivered per window of CLOCK_MONOTONIC from the origin
// on, and the windows in which the receiver saw no byte for kStallNs: on a
// link that never pauses that is the host not running the receiver, the
// sender or the releaser (a loaded 2-core machine does that for up to 100 ms),
// and the bytes it held land in the next window.
struct Delivery {
  std::vector<double> bytes;
  std::vector<bool> stalled;
};
constexpr std::uint64_t kStallNs = 25 * kMs;

void mark_stall(Delivery& delivery, std::uint64_t from_ns, std::uint64_t to_ns, std::uint64_t window_ns) {
  for (std::uint64_t w = from_ns / window_ns; w <= to_ns / window_ns + 1; ++w) {
    if (delivery.stalled.size() <= w) delivery.stalled.resize(w + 1, false);
    delivery.stalled[w] = true;
  }
}

Delivery received_per_window(const em::Host& from, const em::Host& to, std::uint64_t origin_ns,
                             std::uint64_t window_ns, double seconds) {
  int listener = -1;
  {
    em::NetnsScope in(to.netns);
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(5201);
    addr.sin_addr.s_addr = htonl(to.ipv4);
    BOOST_REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    BOOST_REQUIRE(::listen(listener, 1) == 0);
  }
  const std::uint64_t end_ns = monotonic_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  std::atomic<bool> done{false};
  std::thread sender([&] {
    em::NetnsScope in(from.netns);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(5201);
    addr.sin_addr.s_addr = htonl(to.ipv4);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      std::vector<char> chunk(256 * 1024, 'x');
      while (!done && ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) {
      }
    }
    ::close(fd);
  });
  const int conn = ::accept(listener, nullptr, nullptr);
  Delivery delivery;
  std::vector<char> buffer(1 << 20);
  std::uint64_t last = 0;
  while (conn >= 0) {
    const ssize_t n = ::recv(conn, buffer.data(), buffer.size(), 0);
    const std::uint64_t now = monotonic_ns();
    if (n <= 0 || now >= end_ns) break;
    if (now < origin_ns) continue;
    const std::uint64_t at = now - origin_ns;
    if (last != 0 && at - last > kStallNs) mark_stall(delivery, last, at, window_ns);
    last = at;
    const std::size_t window = static_cast<std::size_t>(at / window_ns);
    if (delivery.bytes.size() <= window) delivery.bytes.resize(window + 1, 0);
    delivery.bytes[window] += static_cast<double>(n);
  }
  delivery.stalled.resize(delivery.bytes.size(), false);
  done = true;
  if (conn >= 0) ::close(conn);
  ::close(listener);
  sender.join();
  return delivery;
}

void check_goodput_follows_the_square_wave() {
  Testbed bed(kSquareWave);
  const std::vector<wanlab_sched_entry> schedule = bed.schedule();
  BOOST_REQUIRE(schedule.size() == 3u);
  // Receiver time: the schedule's time plus the one-way delay. Windows start
  // one RTT after each edge reaches the receiver: four of 100 ms per half.
  const std::uint64_t rtt = 2 * kOneWayNs;
  const std::uint64_t origin = schedule[0].head.start_ns + kOneWayNs + rtt;
  const Delivery delivery =
      received_per_window(bed.state.host("east-0"), bed.state.host("west-0"), origin, 100 * kMs, 9.0);

  int checked = 0, within = 0, stalled = 0;
  const std::uint64_t now_offset = monotonic_ns() - origin;
  for (std::size_t w = 0; w < delivery.bytes.size(); ++w) {
    const std::uint64_t begin = w * 100 * kMs;
    const std::uint64_t in_half = begin % kHalfPeriodNs;
    // Skip the first 3 s (slow start, cubic finding the queue), the window
    // that would cross the next edge, and the last, cut short.
    if (begin < 3000 * kMs || in_half + 100 * kMs > kHalfPeriodNs - rtt || begin + 200 * kMs > now_offset) continue;
    const bool high = (begin / kHalfPeriodNs) % 2 == 0;
    const double expected = (high ? kHighBps : kLowBps) * em::kPayloadShare;
    const double measured = delivery.bytes[w] * 8 / 0.1;
    BOOST_TEST_MESSAGE("window " << w << (high ? " high " : " low  ") << measured / 1e6 << " Mbit/s, expected "
                                 << expected / 1e6 << (delivery.stalled[w] ? " (host stalled)" : ""));
    ++checked;
    if (delivery.stalled[w]) {
      ++stalled;
      continue;
    }
    BOOST_TEST_INFO("window " << w);
    BOOST_TEST(std::abs(measured / expected - 1) <= 0.05, measured / 1e6 << " Mbit/s, expected " << expected / 1e6);
    ++within;
  }
  BOOST_TEST_REQUIRE(checked >= 16);
  BOOST_TEST(stalled <= checked / 4, stalled << " of " << checked << " windows with the host stalled");
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
    const std::uint64_t sent_from = monotonic_ns();
    const auto echoes = em::measure_echoes_paced(bed.endpoint("east-0"), bed.endpoint("west-0"), 100, 50);
    BOOST_TEST_REQUIRE(echoes.size() >= 95u);
    // Never below the trace; at most the usual slack above it, the median of
    // each phase always and nine echoes in ten (a loaded machine delays some).
    std::map<double, std::vector<double>> by_phase;
    for (std::size_t i = 0; i < echoes.size(); ++i) {
      const std::uint64_t in_period = (sent_from + i * 50 * kMs - start) % (2000 * kMs);
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
      return test::json_number(test::json_object_with(stats.output, R"("from": "east")", R"("to": "west")"),
                               "rate_set_bps");
    };
    BOOST_TEST(rate_set() == 50e6);
    const auto set = test::wanlab({"set", "east", "west", "--testbed", kName, "--one-way", "--schedule",
                                   csv.path.string()});
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
