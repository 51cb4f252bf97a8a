// The schedule benchmark: how closely TCP goodput follows a rate
// trace, per 100 ms window, at several link rates. A two-DC testbed whose rate
// is a square wave (the rate for 500 ms, 40% of it for 500 ms), cubic streams
// across it, goodput counted at the receiver in windows aligned to the
// schedule's own clock; tracking error per window against the configured
// rate's payload share, the window one RTT after each edge on. Run by
// bench/run-trace-bench.sh.
//
//   wanlab_trace_bench [--wanlab PATH] [--rates 100mbit,1gbit,5gbit] [--seconds N]
//                      [--markdown FILE] [--csv-dir DIR] [--command TEXT]
//                      [--mahimahi DIR [--mahimahi-user USER]]
// --csv-dir: every window of each rate in DIR/trace-RATE.csv.
// --mahimahi: also the same square wave replayed by Mahimahi (`mm-delay 10
//   mm-link` built in DIR; setuid-root copies of them in the work directory,
//   started as USER, default nobody, since its shells refuse a root real
//   uid), measured with the same sender, receiver and windows; its windows in
//   CSV-DIR/trace-mahimahi-RATE.csv.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "trace/mahimahi.hpp"
#include "trace/square_wave.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/units.hpp"

namespace em = wanlab::emulator;
namespace fs = std::filesystem;
namespace base = wanlab::base;
using namespace wanlab::bench;
using namespace wanlab::bench::trace;

namespace {

constexpr double kWindowS = 0.1;
constexpr double kStallS = 0.025;

struct Config {
  std::string wanlab;
  std::vector<std::string> rates{"100mbit", "1gbit", "5gbit"};
  double seconds = 10;
  std::string markdown, command;
  std::optional<base::OutputDir> csv_dir;
  std::string mahimahi;  // folder with mm-delay and mm-link; "" = not run
  std::string mahimahi_user = "nobody";
};

// Where a result's windows go in --csv-dir.
std::string csv_name(bool mahimahi, const std::string& rate) {
  return (mahimahi ? "trace-mahimahi-" : "trace-") + rate + ".csv";
}

struct Window {
  double at_s;  // from the first counted window
  double configured_bps, measured_bps;
  bool settled, stalled;
};

struct RateResult {
  std::string emulator;  // "wanlab" | "mahimahi"
  std::string rate;
  int streams = 1;
  double payload_share = em::kPayloadShare;  // of the configured rate
  std::vector<Window> windows;
  std::string unable;  // why there is no tracking error to show; "" = there is
};

// Goodput per window as a share of the configured payload rate.
double tracking_ratio(const RateResult& result, const Window& w) {
  return w.measured_bps / (w.configured_bps * result.payload_share);
}

std::string scenario_text(const std::string& rate, std::uint64_t bps) {
  return fmt::format(R"(name = "bench-trace"
[defaults]
delay = "10ms"
rate = "{0}"
queue = "4bdp"
schedule = {{ period = "{2}ms", steps = [{{ time = "0s", rate = "{0}" }}, {{ time = "{3}ms", rate = "{1}" }}] }}
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "{4}"
tcp_rmem_max = "{5}"
[[dc]]
name = "east"
[[dc]]
name = "west"
)",
                     rate, em::units::format_rate(static_cast<std::uint64_t>(static_cast<double>(bps) * kLowShare)),
                     2 * kHalfNs / kMs, kHalfNs / kMs, kTcpWmemMax, kTcpRmemMax);
}

int streams_at(std::uint64_t bps) { return bps >= 1'000'000'000 ? 4 : 1; }

// Cubic streams across the link, goodput counted at the receiver in windows
// of the schedule's clock: `origin_ns` (CLOCK_MONOTONIC) is a time the square
// wave's high half starts at the sender's end of the link.
RateResult measure_windows(const Config& config, const std::string& emulator, const std::string& rate,
                           std::uint64_t origin_ns, const em::Endpoint& from, const em::Endpoint& to) {
  const std::uint64_t bps = em::units::parse_rate(rate);
  // Receiver time: the schedule's plus the one-way delay; counted from a
  // period's start 3 s on (slow start, cubic finding the queue).
  const std::uint64_t origin = origin_ns + kOneWayNs;
  const std::uint64_t earliest = static_cast<std::uint64_t>(wanlab::base::monotonic_ns()) + 3000 * kMs;
  em::GoodputOptions options;
  options.count_from_mono_ns = origin + (earliest - origin + 2 * kHalfNs - 1) / (2 * kHalfNs) * (2 * kHalfNs);
  options.seconds = config.seconds;
  options.congestion = "cubic";
  options.streams = streams_at(bps);
  const em::GoodputReport report = em::measure_goodput(from, to, options, kWindowS);
  RateResult result{emulator, rate, options.streams, em::kPayloadShare, {}, {}};
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

RateResult measure(const Config& config, const std::string& work, const std::string& rate) {
  const std::uint64_t bps = em::units::parse_rate(rate);
  const std::string path = work + "/bench-trace.toml";
  wanlab::base::replace_file(path, scenario_text(rate, bps));
  Testbed bed(config.wanlab, path, "bench-trace");
  const auto schedule = em::Datapath::open_pinned(em::bpffs_dir(bed.name())).schedule(0, 1);
  if (schedule.empty()) throw std::runtime_error("the testbed has no schedule");
  const em::Host from = bed.host_of_dc(0), to = bed.host_of_dc(1);
  return measure_windows(config, "wanlab", rate, schedule[0].head.start_ns, em::Endpoint{from.netns, from.ipv4},
                         em::Endpoint{to.netns, to.ipv4});
}
// A settled high window's goodput below this share of the configured payload
// rate, at the median, means the emulator could not carry the rate at all:
// its tracking error would measure its ceiling, not the trace.
constexpr double kCarriedShare = 0.8;

RateResult measure_mahimahi(const Config& config, const std::string& work, const std::string& rate) {
  const std::uint64_t bps = em::units::parse_rate(rate);
  RateResult result{"mahimahi", rate, streams_at(bps), kMahimahiPayloadShare, {}, {}};
  try {
    // Mahimahi checks forwarding; the receiver outside gets the testbed hosts' buffers.
    SysctlOverride forwarding("/proc/sys/net/ipv4/ip_forward", "1");
    SysctlOverride wmem("/proc/sys/net/ipv4/tcp_wmem",
                        fmt::format("4096 16384 {}", em::units::parse_size(kTcpWmemMax)));
    SysctlOverride rmem("/proc/sys/net/ipv4/tcp_rmem",
                        fmt::format("4096 131072 {}", em::units::parse_size(kTcpRmemMax)));
    MahimahiShell shell({config.mahimahi, config.mahimahi_user, config.seconds}, work, bps);
    const CpuMeter cpu(::getpid());
    result = measure_windows(config, "mahimahi", rate, shell.origin_ns(), shell.inside(), shell.outside());
    const double busy = cpu.read().system_pct_of_all;
    result.payload_share = kMahimahiPayloadShare;
    std::vector<double> high, low;  // settled windows' goodput
    for (const Window& w : result.windows)
      if (w.settled) (w.configured_bps == static_cast<double>(bps) ? high : low).push_back(w.measured_bps);
    auto median_of = [](const std::vector<double>& v) { return v.empty() ? 0.0 : em::median(v); };
    const double payload_bps = static_cast<double>(bps) * kMahimahiPayloadShare;
    if (median_of(high) < kCarriedShare * payload_bps)
      result.unable = fmt::format(
          "Mahimahi did not carry {}: goodput in the high half's settled windows {:.0f} Mbit/s at the median against "
          "{:.0f} configured (payload), in the low half's {:.0f} against {:.0f}, the machine's CPUs {:.0f}% busy; "
          "mm-link and mm-delay move every packet through TUN devices in userspace",
          rate, median_of(high) / 1e6, payload_bps / 1e6, median_of(low) / 1e6, kLowShare * payload_bps / 1e6, busy);
  } catch (const base::Interrupted&) {
    throw;
  } catch (const std::exception& error) {
    result.windows.clear();
    result.unable = fmt::format("Mahimahi did not run at {}: {}", rate, error.what());
  }
  return result;
}

double percentile_of(std::vector<double> values, double p) {
  return values.empty() ? std::nan("") : em::percentile(std::move(values), p);
}

std::vector<std::string> row_of(const RateResult& result) {
  if (!result.unable.empty()) {
    const auto settled =
        std::count_if(result.windows.begin(), result.windows.end(), [](const Window& w) { return w.settled; });
    return {result.emulator,
            result.rate,
            std::to_string(result.streams),
            std::to_string(settled),
            "-",
            "no: see note",
            "-",
            "-",
            "-",
            "-",
            "-"};
  }
  std::vector<double> errors, all_errors;
  int stalled = 0, within = 0;
  for (const Window& w : result.windows) {
    if (!w.settled) continue;
    const double error = std::abs(tracking_ratio(result, w) - 1);
    all_errors.push_back(error);
    if (w.stalled) {
      ++stalled;
      continue;
    }
    errors.push_back(error);
    within += error <= 0.05;
  }
  auto pct = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.1f}%", 100 * v); };
  return {result.emulator,
          result.rate,
          std::to_string(result.streams),
          std::to_string(all_errors.size()),
          std::to_string(stalled),
          pct(em::mean(errors)),
          pct(percentile_of(errors, 50)),
          pct(percentile_of(errors, 90)),
          pct(percentile_of(errors, 100)),
          fmt::format("{} of {}", within, errors.size()),
          pct(percentile_of(all_errors, 90))};
}

const Program kProgram{
    "wanlab_trace_bench",
    "goodput against a square-wave rate trace per 100 ms window at several rates (root; about 20 s a rate)",
    {valued("wanlab", "PATH", "the wanlab binary (default: the one built beside this benchmark)"),
     valued("rates", "LIST", "link rates, comma-separated (default 100mbit,1gbit,5gbit)"),
     valued("seconds", "N", "counted seconds a rate, 2 to 3600 (default 10)"),
     valued("markdown", "FILE", "write the table there as markdown"),
     valued("csv-dir", "DIR", "every window of each rate in DIR/trace-RATE.csv"),
     valued("command", "TEXT", "the command the table's note says made it"),
     valued("mahimahi", "DIR", "also Mahimahi's replay, with mm-delay and mm-link built in DIR"),
     valued("mahimahi-user", "USER", "who runs Mahimahi's shells (default nobody)")},
    ""};

std::string checked_rate(const std::string& rate) {
  em::units::parse_rate(rate);  // a bad one fails here, before any testbed
  return rate;
}

Config config_of(const Options& options) {
  Config config;
  config.wanlab = wanlab_option(options);
  config.rates = list_option(options, "rates", checked_rate).value_or(config.rates);
  config.seconds = options.decimal("seconds", 2, 3600).value_or(config.seconds);
  config.markdown = base::output_file_option(options, "markdown").value_or("");
  config.command = options.get("command").value_or("");
  config.mahimahi_user = options.get("mahimahi-user").value_or(config.mahimahi_user);
  if (const auto dir = options.get("mahimahi")) {
    config.mahimahi = fs::absolute(*dir).string();
    for (const char* name : {"mm-delay", "mm-link"})
      if (::access((config.mahimahi + "/" + name).c_str(), X_OK) != 0)
        throw UsageError("--mahimahi: no executable " + config.mahimahi + "/" + name);
  }
  config.csv_dir = base::output_dir_option(options, "csv-dir", [&](const base::OutputDir& dir) {
    for (const std::string& rate : config.rates) {
      dir.check(csv_name(false, rate));
      if (!config.mahimahi.empty()) dir.check(csv_name(true, rate));
    }
  });
  return config;
}

void write_csv(const wanlab::base::OutputDir& dir, const std::string& name, const RateResult& result) {
  dir.write(name, [&](std::ostream& out) {
    out << "time_s,configured_mbit,measured_mbit,settled,stalled\n";
    for (const Window& w : result.windows)
      out << fmt::format("{:.1f},{:.3f},{:.3f},{},{}\n", w.at_s, w.configured_bps * result.payload_share / 1e6,
                         w.measured_bps / 1e6, w.settled ? 1 : 0, w.stalled ? 1 : 0);
  });
}

Table table_of(const Config& config, const std::vector<RateResult>& results, const std::string& load_start) {
  Table table;
  table.title = fmt::format("Goodput against a square-wave rate trace, per 100 ms window ({})", now_text());
  table.header = {"emulator",  "rate",      "streams",   "windows",   "host stalled",     "error mean",
                  "error p50", "error p90", "error max", "within 5%", "p90 incl. stalled"};
  for (const RateResult& result : results) table.rows.push_back(row_of(result));
  table.notes = {
      fmt::format("Square wave: the rate for {0} ms, {1:.0f}% of it for {0} ms; delay 10 ms each way, queue 4 BDP "
                  "at the rate, cubic; wanlab's nfqueue release path unless the kernel has sch_fq.",
                  kHalfNs / kMs, 100 * kLowShare),
      "Error: |goodput / (configured x payload share) - 1| per 100 ms window of the schedule's clock at the "
      "receiver, windows from one RTT after an edge to the next edge; mean, p50, p90 and max over the windows "
      "the host did not stall. Payload share: 1448/1514 for wanlab (its rate counts Ethernet frames), 1448/1500 "
      "for Mahimahi (a trace line is one 1500-byte IP packet).",
      "Host stalled: the receiver got no byte for 25 ms in or just before the window (the host did not run the "
      "receiver, sender or releaser); those windows are counted apart.",
      fmt::format("Load average at start {}, at end {}.", load_start, load_average())};
  if (config.mahimahi.empty()) {
    table.notes.push_back("Mahimahi's own replay is not beside it: run without --mahimahi.");
  } else {
    table.notes.push_back(
        fmt::format("Mahimahi: `mm-delay 10 mm-link UP DOWN` with droptail queues of 4 BDP in bytes, started as {}; "
                    "the trace is one 1500-byte delivery opportunity a line, the capacity of each ms on its own "
                    "line, looping every {} ms. Windows start from the uplink trace's time 0, read when mm-link "
                    "opens it (a FIFO) as the start of that CLOCK_REALTIME ms, Mahimahi's own clock: up to 1 ms "
                    "off, and mm-link serves each ms's line from that ms on, about 1 ms after wanlab would.",
                    config.mahimahi_user, 2 * kHalfNs / kMs));
    for (const RateResult& result : results)
      if (!result.unable.empty()) table.notes.push_back(result.unable + ".");
  }
  if (!config.command.empty()) table.notes.push_back("Command: " + config.command);
  return table;
}

int run(const Options& options) {
  const Config config = config_of(options);
  if (::geteuid() != 0) throw std::runtime_error("needs root (namespaces, tc, iptables)");
  const WorkDir work("wanlab-trace-bench");
  const std::string load_start = load_average();
  std::vector<RateResult> results;
  for (const std::string& rate : config.rates) {
    base::check_interrupted();
    results.push_back(measure(config, work.path, rate));
    if (!config.mahimahi.empty()) results.push_back(measure_mahimahi(config, work.path, rate));
  }
  const Table table = table_of(config, results, load_start);
  fmt::print("{}\n", table.text());
  if (!config.markdown.empty()) base::write_output_file(config.markdown, table.markdown());
  if (config.csv_dir)
    for (const RateResult& result : results)
      if (!result.windows.empty())
        write_csv(*config.csv_dir, csv_name(result.emulator != "wanlab", result.rate), result);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return main_of(kProgram, run, argc, argv); }
