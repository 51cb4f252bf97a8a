// The schedule benchmark (issue 14): how closely TCP goodput follows a rate
// trace, per 100 ms window, at several link rates. A two-DC testbed whose rate
// is a square wave (the rate for 500 ms, 40% of it for 500 ms), cubic streams
// across it, goodput counted at the receiver in windows aligned to the
// schedule's own clock; tracking error per window against the configured
// rate's payload share, the window one RTT after each edge on. Run by
// bench/run-trace-bench.sh.
//
//   wanlab_trace_bench --wanlab PATH [--rates 100mbit,1gbit,5gbit] [--seconds N]
//                      [--markdown FILE] [--csv-dir DIR] [--command TEXT]
// --csv-dir: every window of each rate in DIR/trace-RATE.csv.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/units.hpp"

namespace em = wanlab::emulator;
namespace fs = std::filesystem;
using namespace wanlab::bench;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kHalfNs = 500 * kMs;
constexpr std::uint64_t kOneWayNs = 10 * kMs;
constexpr double kLowShare = 0.4;
constexpr double kWindowS = 0.1;
constexpr double kStallS = 0.025;

struct Config {
  std::string wanlab;
  std::vector<std::string> rates{"100mbit", "1gbit", "5gbit"};
  double seconds = 10;
  std::string markdown, csv_dir, command;
};

struct Window {
  double at_s;  // from the first counted window
  double configured_bps, measured_bps;
  bool settled, stalled;
};

struct RateResult {
  std::string rate;
  int streams = 1;
  std::vector<Window> windows;
};

std::string scenario_text(const std::string& rate, std::uint64_t bps) {
  return fmt::format(R"(name = "bench-trace"
[defaults]
delay = "10ms"
rate = "{0}"
queue = "4bdp"
schedule = {{ period = "1s", steps = [{{ time = "0s", rate = "{0}" }}, {{ time = "500ms", rate = "{1}" }}] }}
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "64mb"
tcp_rmem_max = "128mb"
[[dc]]
name = "east"
[[dc]]
name = "west"
)",
                     rate, em::units::format_rate(static_cast<std::uint64_t>(static_cast<double>(bps) * kLowShare)));
}

RateResult measure(const Config& config, const std::string& work, const std::string& rate) {
  const std::uint64_t bps = em::units::parse_rate(rate);
  const std::string path = work + "/bench-trace.toml";
  std::ofstream(path) << scenario_text(rate, bps);
  Testbed bed(config.wanlab, path, "bench-trace");
  const auto schedule = em::Datapath::open_pinned(em::bpffs_dir(bed.name())).schedule(0, 1);
  if (schedule.empty()) throw std::runtime_error("the testbed has no schedule");
  // Receiver time: the schedule's plus the one-way delay; counted from a
  // period's start 3 s on (slow start, cubic finding the queue).
  const std::uint64_t origin = schedule[0].head.start_ns + kOneWayNs;
  const std::uint64_t earliest = static_cast<std::uint64_t>(wanlab::base::monotonic_ns()) + 3000 * kMs;
  em::GoodputOptions options;
  options.count_from_mono_ns = origin + (earliest - origin + 2 * kHalfNs - 1) / (2 * kHalfNs) * (2 * kHalfNs);
  options.seconds = config.seconds;
  options.congestion = "cubic";
  options.streams = bps >= 1'000'000'000 ? 4 : 1;
  const em::Host from = bed.host_of_dc(0), to = bed.host_of_dc(1);
  const em::GoodputReport report =
      em::measure_goodput(em::Endpoint{from.netns, from.ipv4}, em::Endpoint{to.netns, to.ipv4}, options, kWindowS);
  RateResult result{rate, options.streams, {}};
  const std::uint64_t rtt = 2 * kOneWayNs;
  for (std::size_t w = 0; w < report.interval_bps.size(); ++w) {
    const std::uint64_t begin = static_cast<std::uint64_t>(static_cast<double>(w) * kWindowS * 1e9);
    const bool high = begin / kHalfNs % 2 == 0;
    const std::uint64_t in_half = begin % kHalfNs;
    Window window;
    window.at_s = static_cast<double>(w) * kWindowS;
    window.configured_bps = static_cast<double>(bps) * (high ? 1.0 : kLowShare);
    window.measured_bps = report.interval_bps[w];
    window.settled = in_half >= rtt && in_half + 100 * kMs <= kHalfNs;
    window.stalled = report.interval_max_gap_s[w] > kStallS || (w > 0 && report.interval_max_gap_s[w - 1] > kStallS);
    result.windows.push_back(window);
  }
  return result;
}

double percentile_of(std::vector<double> values, double p) {
  return values.empty() ? std::nan("") : em::percentile(std::move(values), p);
}

std::vector<std::string> row_of(const RateResult& result) {
  std::vector<double> errors, all_errors;
  int stalled = 0, within = 0;
  for (const Window& w : result.windows) {
    if (!w.settled) continue;
    const double error = std::abs(w.measured_bps / (w.configured_bps * em::kPayloadShare) - 1);
    all_errors.push_back(error);
    if (w.stalled) {
      ++stalled;
      continue;
    }
    errors.push_back(error);
    within += error <= 0.05;
  }
  auto pct = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.1f}%", 100 * v); };
  return {result.rate, std::to_string(result.streams), std::to_string(all_errors.size()), std::to_string(stalled),
          pct(percentile_of(errors, 50)), pct(percentile_of(errors, 90)), pct(percentile_of(errors, 100)),
          fmt::format("{} of {}", within, errors.size()), pct(percentile_of(all_errors, 90))};
}

Config parse_args(int argc, char** argv) {
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": needs a value");
      return argv[++i];
    };
    if (arg == "--wanlab") {
      config.wanlab = fs::absolute(value()).string();
    } else if (arg == "--rates") {
      config.rates.clear();
      std::stringstream list(value());
      for (std::string rate; std::getline(list, rate, ',');) {
        em::units::parse_rate(rate);  // a bad one fails here, before any testbed
        config.rates.push_back(rate);
      }
    } else if (arg == "--seconds") {
      config.seconds = wanlab::base::parse_decimal(value(), 2, 3600);
    } else if (arg == "--markdown") {
      config.markdown = value();
    } else if (arg == "--csv-dir") {
      config.csv_dir = value();
    } else if (arg == "--command") {
      config.command = value();
    } else {
      throw std::invalid_argument("unknown argument \"" + arg +
                                  "\" (--wanlab PATH, --rates LIST, --seconds N, --markdown FILE, --csv-dir DIR, --command TEXT)");
    }
  }
  if (::access(config.wanlab.c_str(), X_OK) != 0)
    throw std::invalid_argument("--wanlab: \"" + config.wanlab + "\" is not an executable (build the wanlab target)");
  return config;
}

void write_csv(const std::string& path, const RateResult& result) {
  std::ofstream out(path);
  out << "time_s,configured_mbit,measured_mbit,settled,stalled\n";
  for (const Window& w : result.windows)
    out << fmt::format("{:.1f},{:.3f},{:.3f},{},{}\n", w.at_s, w.configured_bps * em::kPayloadShare / 1e6,
                       w.measured_bps / 1e6, w.settled ? 1 : 0, w.stalled ? 1 : 0);
}

int run(int argc, char** argv) {
  const Config config = parse_args(argc, argv);
  if (::geteuid() != 0) throw std::runtime_error("needs root (namespaces, tc, iptables)");
  install_signal_cleanup(config.wanlab);
  WorkDir work("wanlab-trace-bench");
  remove_on_signal(work.path);
  const std::string load_start = load_average();
  std::vector<RateResult> results;
  for (const std::string& rate : config.rates) results.push_back(measure(config, work.path, rate));

  Table table;
  table.title = fmt::format("Goodput against a square-wave rate trace, per 100 ms window ({})", now_text());
  table.header = {"rate", "streams", "windows", "host stalled", "error p50", "error p90", "error max", "within 5%",
                  "p90 incl. stalled"};
  for (const RateResult& result : results) table.rows.push_back(row_of(result));
  table.notes = {
      "Square wave: the rate for 500 ms, 40% of it for 500 ms; delay 10 ms each way, queue 4 BDP, cubic, nfqueue "
      "release path unless the kernel has sch_fq.",
      "Error: |goodput / (configured x 1448/1514) - 1| per 100 ms window of the schedule's clock at the receiver, "
      "windows from one RTT after an edge to the next edge.",
      "Host stalled: the receiver got no byte for 25 ms in or just before the window (the host did not run the "
      "receiver, sender or releaser); those windows are counted apart.",
      fmt::format("Load average at start {}, at end {}.", load_start, load_average()),
      "Mahimahi's own replay is not beside it: no mahimahi package is in this machine's package lists, and it was "
      "not built from source in this run."};
  if (!config.command.empty()) table.notes.push_back("Command: " + config.command);
  fmt::print("{}\n", table.text());
  if (!config.markdown.empty()) std::ofstream(config.markdown) << table.markdown();
  if (!config.csv_dir.empty())
    for (const RateResult& result : results) write_csv(config.csv_dir + "/trace-" + result.rate + ".csv", result);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return wanlab::bench::main_of("wanlab_trace_bench", run, argc, argv); }
