// The emulator benchmark's accuracy sections: RTT against the configured
// delay, TCP goodput against the configured rate, and the long-run rate.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "emulator/sections.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/tcp_window.hpp"

namespace wanlab::bench::emu {
namespace em = wanlab::emulator;
namespace base = wanlab::base;
using namespace std::chrono_literals;
using em::kPayloadShare;

// ---------------------------------------------------------------- RTT accuracy

Table rtt_section(const Config& config, Findings& findings) {
  Table table;
  table.title = "RTT accuracy (2 DCs, 1 Gbit/s, 200 UDP echoes 5 ms apart per row)";
  table.header = {"One-way delay",
                  "RTT configured",
                  "Answered",
                  "RTT median",
                  "Error median",
                  "Error p99",
                  "Error max",
                  "Target",
                  "Result",
                  "Median over path floor",
                  "App-level error median / p99",
                  "Echo hold median / p99",
                  "Releaser lateness (mean)",
                  "Machine busy / softirq / steal"};
  Testbed bed(config.wanlab, config.work_dir, spec_of("bench-rtt", 2, "5ms", "1gbit"));
  findings.note_release(bed);
  const auto from = endpoint(bed.host_of_dc(0)), to = endpoint(bed.host_of_dc(1));
  constexpr int kEchoes = 200;
  double floor_ms = NAN;  // median error of the 0 ms row
  for (int delay_ms : {0, 5, 25, 50, 100}) {
    base::check_interrupted();
    bed.set_link(0, 1, {{"delay", fmt::format("{}ms", delay_ms)}});
    pause_for(200ms);
    const auto before = read_releaser_counters(bed.name());
    const CpuMeter cpu(bed.state().daemon_pid);
    const auto echoes = em::measure_echoes_paced(from, to, kEchoes, 5);
    const auto usage = cpu.read();
    const auto after = releaser_after_run(bed.name());
    const double configured = 2.0 * delay_ms;
    std::vector<double> rtts, errors, app_errors, holds;
    for (const auto& echo : echoes) {
      rtts.push_back(echo.network_rtt_ms());
      errors.push_back(echo.network_rtt_ms() - configured);
      app_errors.push_back(echo.rtt_ms - configured);
      holds.push_back(echo.echo_hold_ms);
    }
    const double err_median = em::median(errors), err_p99 = em::percentile(errors, 99);
    const double err_max = errors.empty() ? NAN : *std::max_element(errors.begin(), errors.end());
    std::string target = "median <= 0.1 ms, p99 <= 0.5 ms", result = "-";
    if (delay_ms == 0) {
      target = "(path floor, no target)";
      floor_ms = err_median;
    } else {
      const bool median_ok = err_median <= 0.1, p99_ok = err_p99 <= 0.5;
      const std::string measured = fmt::format("median {:+.3f} ms, p99 {:+.3f} ms", err_median, err_p99);
      result = findings.check(fmt::format("RTT error, one-way {} ms", delay_ms), target, measured,
                              median_ok && p99_ok && echoes.size() == static_cast<std::size_t>(kEchoes));
      if (!median_ok || !p99_ok)
        result += !median_ok && !p99_ok ? " (median, p99)" : !median_ok ? " (median)" : " (p99)";
    }
    table.rows.push_back({fmt::format("{} ms", delay_ms), fmt::format("{:.3f} ms", configured),
                          fmt::format("{}/{}", echoes.size(), kEchoes), fmt::format("{:.3f} ms", em::median(rtts)),
                          fmt::format("{:+.3f} ms", err_median), fmt::format("{:+.3f} ms", err_p99),
                          fmt::format("{:+.3f} ms", err_max), target, result,
                          delay_ms == 0 ? "-" : fmt::format("{:+.3f} ms", err_median - floor_ms),
                          fmt::format("{:+.3f} / {:+.3f} ms", em::median(app_errors), em::percentile(app_errors, 99)),
                          fmt::format("{:.3f} / {:.3f} ms", em::median(holds), em::percentile(holds, 99)),
                          mean_lateness(before, after), machine_load(usage)});
  }
  table.notes = {
      "Error = network RTT - (delay there + delay back). Network RTT = from just before the sender's sendto() to "
      "the kernel's receive timestamp (SO_TIMESTAMPNS) of the answer, less the echo side's hold time (its "
      "kernel receive timestamp to its sendto), as a kernel-answered ping would see it.",
      "App-level error keeps the echo side's hold time in (a userspace echo thread's wake-up).",
      "The 0 ms row is the path itself (veths, tc program, NFQUEUE rule) with nothing held: the floor under every "
      "error. Median over path floor = what holding packets in the releaser adds to it.",
      "Releaser lateness = verdict time - departure time the tc program computed, mean over this row's packets "
      "(both directions). Machine busy / softirq / steal = share of both CPUs' time during the row: busy (all "
      "processes and the kernel), of that in softirq (packet processing, anyone's), and taken by the hypervisor."};
  return table;
}

// ---------------------------------------------------------------- TCP goodput

Table goodput_section(const Config& config, Findings& findings) {
  Table table;
  table.title = "TCP goodput vs configured rate (2 DCs, one-way 25 ms, queue 1 BDP, cubic, 3 s warm-up + 8 s counted)";
  table.header = {"Rate",
                  "Streams",
                  "Goodput",
                  "Of rate",
                  "Of payload max",
                  "Target (of rate)",
                  "Result",
                  "Retrans",
                  "Queue drops",
                  "Sender limited by",
                  "srtt",
                  "Releaser CPU",
                  "Machine busy / softirq / steal"};
  // 5 Gbit/s x 50 ms is 31 MB; cubic's queue of 1 BDP lets cwnd reach twice that.
  ScenarioSpec spec = spec_of("bench-gp", 2, "25ms", "10mbit");
  spec.wmem_max = "96mb";
  spec.rmem_max = "128mb";
  Testbed bed(config.wanlab, config.work_dir, spec);
  findings.note_release(bed);
  const auto from = endpoint(bed.host_of_dc(0)), to = endpoint(bed.host_of_dc(1));
  struct Run {
    int rate_mbit;
    int streams;
  };
  std::vector<std::string> per_second;
  for (const Run run : {Run{10, 1}, Run{100, 1}, Run{1000, 1}, Run{5000, 1}, Run{5000, 4}}) {
    base::check_interrupted();
    bed.set_link(0, 1, {{"rate", fmt::format("{}mbit", run.rate_mbit)}});
    pause_for(500ms);
    const double rate = run.rate_mbit * 1e6;
    em::GoodputOptions options;
    options.seconds = 8;
    options.warmup_seconds = 3;
    options.congestion = "cubic";
    options.streams = run.streams;
    const auto counters_before = read_pair_counters(bed.name(), 0, 1);
    const CpuMeter cpu(bed.state().daemon_pid);
    const auto report = em::measure_goodput(from, to, options);
    const auto usage = cpu.read();
    const auto counters_after = read_pair_counters(bed.name(), 0, 1);
    const double of_rate = report.bps / rate;
    std::string target = "93% - 100%", result = "-";
    if (run.rate_mbit <= 1000) {
      result = findings.check(fmt::format("TCP goodput at {} Mbit/s", run.rate_mbit), target, pct(of_rate),
                              of_rate >= 0.93 && of_rate <= 1.0);
    } else {
      target = "(above 1 Gbit/s: none)";
    }
    std::string series;
    for (double bps : report.interval_bps) series += fmt::format("{}{:.0f}", series.empty() ? "" : " ", bps / 1e6);
    per_second.push_back(
        fmt::format("{} Mbit/s, {} stream(s), per second (Mbit/s): {}", run.rate_mbit, run.streams, series));
    table.rows.push_back({fmt::format("{} Mbit/s", run.rate_mbit), std::to_string(run.streams), mbit(report.bps),
                          pct(of_rate), pct(report.bps / (rate * kPayloadShare)), target, result,
                          std::to_string(report.sender.retransmitted_segments),
                          std::to_string(counters_after.queue_drops - counters_before.queue_drops),
                          limited_share(report.sender), fmt::format("{:.1f} ms", report.sender.srtt_ms),
                          fmt::format("{:.0f}% of a core", usage.process_pct_of_core), machine_load(usage)});
    std::fflush(stdout);
  }
  table.notes = {
      "The data plane charges L2 frame bytes (Ethernet + IP + TCP headers + payload) against the rate. A full-size TCP "
      "segment carries 1448 payload bytes in a 1514-byte frame (MTU 1500, TCP timestamps on), so TCP payload goodput "
      "can reach at most 1448/1514 = 95.6% of the configured rate.",
      "Of payload max = goodput / (rate x 1448/1514): how much of what TCP can possibly get through it got.",
      "Sender limited by = share of the senders' busy time (TCP_INFO) spent limited by the receive window or send "
      "buffer; Retrans = segments retransmitted; Queue drops = packets the emulated queue (1 BDP) dropped.",
      "Socket buffers: tcp_wmem max 96 MB, tcp_rmem max 128 MB (3x the 31 MB BDP of 5 Gbit/s x 50 ms). Several "
      "streams are used where one stream is not enough; the row says how many."};
  table.notes.insert(table.notes.end(), per_second.begin(), per_second.end());
  return table;
}

// ---------------------------------------------------------------- conformance

Table conformance_section(const Config& config, Findings& findings) {
  Table table;
  table.title =
      "Rate conformance over 30 s (2 DCs, 100 Mbit/s, one-way 25 ms, queue 1 BDP, 1 cubic stream, 3 s warm-up)";
  table.header = {"Measure", "Measured", "Anchor", "Ratio", "Target", "Result"};
  Testbed bed(config.wanlab, config.work_dir, spec_of("bench-conf", 2, "25ms", "100mbit"));
  findings.note_release(bed);
  const auto from = endpoint(bed.host_of_dc(0)), to = endpoint(bed.host_of_dc(1));
  const double rate = 100e6;
  em::GoodputOptions options;
  options.seconds = 30;
  options.warmup_seconds = 3;
  options.congestion = "cubic";

  // The data plane's own count of wire bytes over the same 30 s, read beside the probe.
  PairCounters wire_start, wire_end;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread sampler([&] {
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(options.warmup_seconds));
    wire_start = read_pair_counters(bed.name(), 0, 1);
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(options.warmup_seconds + options.seconds));
    wire_end = read_pair_counters(bed.name(), 0, 1);
  });
  em::GoodputReport report;
  const CpuMeter cpu(bed.state().daemon_pid);
  try {
    report = em::measure_goodput(from, to, options, 1.0);
  } catch (...) {
    sampler.join();
    throw;
  }
  sampler.join();
  const auto usage = cpu.read();
  const double wire_bps = static_cast<double>(wire_end.bytes - wire_start.bytes) * 8 / options.seconds;
  const double payload_max = rate * kPayloadShare;
  const double of_payload_max = report.bps / payload_max;
  const double cov = em::coefficient_of_variation(report.interval_bps);
  const auto [lowest, highest] = std::minmax_element(report.interval_bps.begin(), report.interval_bps.end());

  table.rows.push_back({"Mean goodput / configured rate", mbit(report.bps), "100.0 Mbit/s", pct(report.bps / rate),
                        "(see next row)", "-"});
  table.rows.push_back({"Mean goodput / payload max (rate x 1448/1514)", mbit(report.bps), mbit(payload_max),
                        pct(of_payload_max), "within 1%",
                        findings.check("long-run rate at 100 Mbit/s (of payload max)", "within 1%", pct(of_payload_max),
                                       std::abs(of_payload_max - 1) <= 0.01)});
  table.rows.push_back({"Wire rate by the data plane's counters", mbit(wire_bps), "100.0 Mbit/s", pct(wire_bps / rate),
                        "(diagnostic)", "-"});
  table.rows.push_back({"Per-second goodput CoV (30 samples)", pct(cov), "-", "-", "<= 2%",
                        findings.check("per-second CoV at 100 Mbit/s", "<= 2%", pct(cov), cov <= 0.02)});
  table.rows.push_back({"Per-second goodput min / max", fmt::format("{} / {}", mbit(*lowest), mbit(*highest)),
                        mbit(payload_max),
                        fmt::format("{} / {}", pct(*lowest / payload_max), pct(*highest / payload_max)), "-", "-"});
  table.rows.push_back({"Retransmitted segments / queue drops (whole run)",
                        fmt::format("{} / {}", report.sender.retransmitted_segments, wire_end.queue_drops), "-", "-",
                        "-", "-"});
  std::string series;
  for (double bps : report.interval_bps) series += fmt::format("{}{:.1f}", series.empty() ? "" : " ", bps / 1e6);
  table.notes = {
      "Per-second goodput (Mbit/s): " + series,
      fmt::format("During the run: releaser {:.0f}% of a core; machine busy / softirq / steal {}.",
                  usage.process_pct_of_core, machine_load(usage)),
      "Wire rate = wire bytes the tc program passed for the pair during the counted 30 s (its own accounting)."};
  return table;
}

}  // namespace wanlab::bench::emu
