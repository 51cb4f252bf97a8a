// The emulator benchmark: RTT accuracy, TCP goodput against the configured
// rate, capacity against plain forwarding, long-run rate conformance and
// scaling with the number of DCs, each beside its target. Testbeds come up and
// go down through the `wanlab` binary (which also runs their releaser daemons);
// measurements run in-process with wanlab/emulator/probe.hpp.
//
// Usage (root): wanlab_emulator_bench [--wanlab PATH] [--markdown FILE]
//               [--only rtt,goodput,capacity,conformance,scale] [--note TEXT]
//               [--command TEXT]
//
// --note: a line about where the figures come from, printed in the header and
// the markdown (bench/run-emulator-bench.sh --vm says they are under TCG);
// --command: the command the markdown says made it.
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/core.h>
#include <fmt/format.h>

#include "bench_support.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/emulator/tcp_window.hpp"

namespace fs = std::filesystem;
namespace em = wanlab::emulator;
namespace base = wanlab::base;
using namespace wanlab::bench;
using namespace std::chrono_literals;

namespace {

using wanlab::emulator::kPayloadShare;

struct Config {
  std::string wanlab;
  std::string markdown;
  std::string note;
  std::string command = "bench/run-emulator-bench.sh";
  std::set<std::string> sections;
  std::string work_dir;
};

// One target checked, for the summary.
struct Outcome {
  std::string what;
  std::string target;
  std::string measured;
  bool pass = false;
};
std::vector<Outcome> outcomes;
std::string release_path;  // as the first testbed reported it

void note_release(const Testbed& bed) {
  if (release_path.empty()) release_path = em::to_string(bed.state().release) + " (" + bed.state().release_reason + ")";
}

std::string check(const std::string& what, const std::string& target, const std::string& measured, bool pass) {
  outcomes.push_back({what, target, measured, pass});
  return verdict(pass);
}

em::Endpoint endpoint(const em::Host& host) { return {host.netns, host.ipv4}; }

ScenarioSpec spec_of(const std::string& name, int dcs, const std::string& delay,
                     std::optional<std::string> rate = std::nullopt) {
  ScenarioSpec spec;
  spec.name = name;
  spec.dcs = dcs;
  spec.delay = delay;
  spec.rate = std::move(rate);
  return spec;
}

std::string mbit(double bps) { return fmt::format("{:.1f} Mbit/s", bps / 1e6); }
std::string pct(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

void pause_for(std::chrono::milliseconds time) { std::this_thread::sleep_for(time); }

std::string machine_load(const CpuMeter::Usage& usage) {
  return fmt::format("{:.0f}% / {:.0f}% / {:.0f}%", usage.system_pct_of_all, usage.softirq_pct_of_all,
                     usage.steal_pct_of_all);
}

std::string limited_share(const em::SenderTcpInfo& info) {
  if (info.busy_us == 0) return "n/a";
  return fmt::format("rwnd {:.0f}% / sndbuf {:.0f}%",
                     100.0 * static_cast<double>(info.rwnd_limited_us) / static_cast<double>(info.busy_us),
                     100.0 * static_cast<double>(info.sndbuf_limited_us) / static_cast<double>(info.busy_us));
}

// The releaser's counters move once a second; wait for the last update to cover a run.
em::ReleaserStats releaser_after_run(const std::string& testbed) {
  pause_for(1100ms);
  return read_releaser_counters(testbed);
}

std::string mean_lateness(const em::ReleaserStats& before, const em::ReleaserStats& after) {
  const auto packets = after.packets - before.packets;
  if (packets == 0) return "no verdicts";
  return fmt::format("{:.1f} us ({} verdicts, {} >100us)",
                     static_cast<double>(after.late_sum_ns - before.late_sum_ns) / 1e3 / static_cast<double>(packets),
                     packets, after.late_over_100us - before.late_over_100us);
}

// ---------------------------------------------------------------- RTT accuracy

Table rtt_section(const Config& config) {
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
  note_release(bed);
  const auto from = endpoint(bed.host_of_dc(0)), to = endpoint(bed.host_of_dc(1));
  constexpr int kEchoes = 200;
  double floor_ms = NAN;  // median error of the 0 ms row
  for (int delay_ms : {0, 5, 25, 50, 100}) {
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
      result = check(fmt::format("RTT error, one-way {} ms", delay_ms), target, measured,
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

Table goodput_section(const Config& config) {
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
  note_release(bed);
  const auto from = endpoint(bed.host_of_dc(0)), to = endpoint(bed.host_of_dc(1));
  struct Run {
    int rate_mbit;
    int streams;
  };
  std::vector<std::string> per_second;
  for (const Run run : {Run{10, 1}, Run{100, 1}, Run{1000, 1}, Run{5000, 1}, Run{5000, 4}}) {
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
      result = check(fmt::format("TCP goodput at {} Mbit/s", run.rate_mbit), target, pct(of_rate),
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

// ---------------------------------------------------------------- capacity

Table capacity_section(const Config& config) {
  constexpr int kRounds = 5;
  Table table;
  table.title = fmt::format(
      "Capacity: emulator without shaping vs plain forwarding (same namespaces; median of {} interleaved "
      "rounds of 1 s warm-up + 3 s counted)",
      kRounds);
  table.header = {"Path",
                  "Streams",
                  "Throughput (median)",
                  "Rounds (Gbit/s)",
                  "Vs plain forwarding",
                  "Target",
                  "Result",
                  "Releaser CPU",
                  "Machine busy / softirq / steal",
                  "Idle RTT median"};
  Testbed bed(config.wanlab, config.work_dir, spec_of("bench-cap", 2, "0ms"));
  note_release(bed);
  const auto from = endpoint(bed.host_of_dc(0)), to = endpoint(bed.host_of_dc(1));
  struct Variant {
    std::string label;
    std::function<void()> enter;  // puts the testbed into this variant
    std::vector<double> rtt_ms;
    std::vector<double> bps[2];  // per round, 1 and 4 streams
    std::vector<CpuMeter::Usage> usage[2];
    // Over all rounds, around the throughput runs: the releaser's verdicts,
    // its CPU time and the wire bytes of both directions.
    std::uint64_t verdicts = 0, wire_bytes = 0;
    double releaser_cpu_seconds = 0, seconds = 0;
  };
  bool attached = true;
  auto attach = [&](bool on) {
    if (on == attached) return;
    on ? bed.attach_programs() : bed.detach_programs();
    attached = on;
  };
  std::vector<Variant> variants(3);
  variants[0].label = "(a) plain forwarding: tc program detached";
  variants[0].enter = [&] { attach(false); };
  variants[1].label = "(b) tc program only: delay 0, unlimited (nothing held)";
  variants[1].enter = [&] {
    attach(true);
    bed.set_link(0, 1, {{"delay", "0ms"}});
  };
  variants[2].label = "(c) releaser engaged: delay 1 ms, unlimited (every packet held)";
  variants[2].enter = [&] {
    attach(true);
    bed.set_link(0, 1, {{"delay", "1ms"}});
  };
  constexpr int kStreams[2] = {1, 4};
  // Rounds interleave the variants so a burst of load from elsewhere does not land on one variant alone.
  for (int round = 0; round < kRounds; ++round) {
    for (auto& variant : variants) {
      variant.enter();
      pause_for(200ms);
      variant.rtt_ms.push_back(em::median(em::measure_rtt_ms(from, to, 50, 2)));
      const auto releaser_before = read_releaser_counters(bed.name());
      const std::uint64_t bytes_before =
          read_pair_counters(bed.name(), 0, 1).bytes + read_pair_counters(bed.name(), 1, 0).bytes;
      const CpuMeter block_cpu(bed.state().daemon_pid);
      for (int i = 0; i < 2; ++i) {
        em::GoodputOptions options;
        options.seconds = 3;
        options.warmup_seconds = 1;
        options.congestion = "cubic";
        options.streams = kStreams[i];
        const CpuMeter cpu(bed.state().daemon_pid);
        variant.bps[i].push_back(em::measure_goodput(from, to, options).bps);
        variant.usage[i].push_back(cpu.read());
        pause_for(300ms);
      }
      const auto releaser_after = releaser_after_run(bed.name());
      const auto block = block_cpu.read();
      variant.verdicts += releaser_after.packets - releaser_before.packets;
      variant.wire_bytes +=
          read_pair_counters(bed.name(), 0, 1).bytes + read_pair_counters(bed.name(), 1, 0).bytes - bytes_before;
      variant.releaser_cpu_seconds += block.process_pct_of_core / 100 * block.seconds;
      variant.seconds += block.seconds;
    }
  }
  attach(true);

  auto median_of = [](const std::vector<CpuMeter::Usage>& usages, double CpuMeter::Usage::*field) {
    std::vector<double> values;
    for (const auto& usage : usages) values.push_back(usage.*field);
    return em::median(values);
  };
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const auto& variant = variants[v];
    for (int i = 0; i < 2; ++i) {
      const double bps = em::median(variant.bps[i]);
      const double ratio = bps / em::median(variants[0].bps[i]);
      std::string target = "(anchor)", result = "-";
      if (v > 0) {
        target = ">= 60%";
        result = check(
            fmt::format("capacity, {}, {} stream(s)", v == 1 ? "tc program only" : "releaser engaged", kStreams[i]),
            target, pct(ratio), ratio >= 0.6);
      }
      std::string rounds;
      for (double round_bps : variant.bps[i])
        rounds += fmt::format("{}{:.1f}", rounds.empty() ? "" : " / ", round_bps / 1e9);
      table.rows.push_back(
          {variant.label, std::to_string(kStreams[i]), mbit(bps), rounds, pct(ratio), target, result,
           fmt::format("{:.0f}% of a core", median_of(variant.usage[i], &CpuMeter::Usage::process_pct_of_core)),
           fmt::format("{:.0f}% / {:.0f}% / {:.0f}%", median_of(variant.usage[i], &CpuMeter::Usage::system_pct_of_all),
                       median_of(variant.usage[i], &CpuMeter::Usage::softirq_pct_of_all),
                       median_of(variant.usage[i], &CpuMeter::Usage::steal_pct_of_all)),
           i == 0 ? fmt::format("{:.3f} ms", em::median(variant.rtt_ms)) : ""});
    }
  }
  table.notes = {
      "(a) deletes the tc filters from every core-side veth (the NFQUEUE rule stays but matches nothing); (b) and (c) "
      "attach the pinned program again. Sender and receiver run in this process, so they share the 2 CPUs with "
      "forwarding and the releaser.",
      "Releaser CPU = utime+stime of the testbed's daemon (/proc/PID/stat) over the run, as % of one core (median of "
      "rounds). "
      "Machine busy / softirq / steal: share of both CPUs' time (all processes and the kernel / in softirq / taken by "
      "the hypervisor).",
      "Idle RTT median: 50 UDP echoes before the throughput runs, network RTT (2 ms configured in (c))."};
  const Variant& held = variants[2];
  if (held.verdicts > 0)
    table.notes.push_back(
        fmt::format("(c) over its rounds: {:.0f} verdicts/s, {:.1f} KB of wire bytes per verdict (GSO packets stay "
                    "whole), {:.1f} us of releaser CPU per verdict.",
                    static_cast<double>(held.verdicts) / held.seconds,
                    static_cast<double>(held.wire_bytes) / 1e3 / static_cast<double>(held.verdicts),
                    held.releaser_cpu_seconds * 1e6 / static_cast<double>(held.verdicts)));
  return table;
}

// ---------------------------------------------------------------- conformance

Table conformance_section(const Config& config) {
  Table table;
  table.title =
      "Rate conformance over 30 s (2 DCs, 100 Mbit/s, one-way 25 ms, queue 1 BDP, 1 cubic stream, 3 s warm-up)";
  table.header = {"Measure", "Measured", "Anchor", "Ratio", "Target", "Result"};
  Testbed bed(config.wanlab, config.work_dir, spec_of("bench-conf", 2, "25ms", "100mbit"));
  note_release(bed);
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
                        check("long-run rate at 100 Mbit/s (of payload max)", "within 1%", pct(of_payload_max),
                              std::abs(of_payload_max - 1) <= 0.01)});
  table.rows.push_back({"Wire rate by the data plane's counters", mbit(wire_bps), "100.0 Mbit/s", pct(wire_bps / rate),
                        "(diagnostic)", "-"});
  table.rows.push_back({"Per-second goodput CoV (30 samples)", pct(cov), "-", "-", "<= 2%",
                        check("per-second CoV at 100 Mbit/s", "<= 2%", pct(cov), cov <= 0.02)});
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

// ---------------------------------------------------------------- scale

Table scale_section(const Config& config) {
  Table table;
  table.title =
      "Scale: setup time and first-to-last-DC single-stream throughput (1 host per DC; interleaved rounds: "
      "unshaped 6 x (1 s warm-up + 2 s), shaped 3 x (3 s + 4 s))";
  table.header = {"DCs",
                  "Pairs",
                  "Setup (wanlab up)",
                  "Vs 2 DCs",
                  "Unshaped: 1 ms, unlimited, median (rounds)",
                  "Vs 2 DCs",
                  "Shaped: 1 Gbit/s, 25 ms, median (rounds)",
                  "Vs 2 DCs",
                  "Target",
                  "Result"};
  const std::vector<int> sizes = {2, 16, 64};
  std::vector<std::unique_ptr<Testbed>> beds;
  for (int dcs : sizes) {
    beds.push_back(
        std::make_unique<Testbed>(config.wanlab, config.work_dir, spec_of(fmt::format("bench-dc{}", dcs), dcs, "1ms")));
    note_release(*beds.back());
    fmt::print("  {} DCs up in {:.2f} s\n", dcs, beds.back()->up_seconds());
    std::fflush(stdout);
  }
  auto ends = [&](std::size_t i) {
    return std::pair{endpoint(beds[i]->host_of_dc(0)), endpoint(beds[i]->host_of_dc(sizes[i] - 1))};
  };
  // Rounds interleave the testbeds so a burst of load from elsewhere does not land on one alone.
  auto measure_rounds = [&](double warmup, double seconds, int rounds) {
    std::vector<std::vector<double>> bps(sizes.size());
    for (int round = 0; round < rounds; ++round) {
      for (std::size_t i = 0; i < beds.size(); ++i) {
        em::GoodputOptions options;
        options.seconds = seconds;
        options.warmup_seconds = warmup;
        options.congestion = "cubic";
        const auto [from, to] = ends(i);
        bps[i].push_back(em::measure_goodput(from, to, options).bps);
        pause_for(300ms);
      }
    }
    return bps;
  };
  const auto unshaped = measure_rounds(1, 2, 6);
  for (std::size_t i = 0; i < beds.size(); ++i)
    beds[i]->set_link(0, sizes[i] - 1, {{"rate", "1gbit"}, {"delay", "25ms"}});
  const auto shaped = measure_rounds(3, 4, 3);

  auto rounds_text = [](const std::vector<double>& values) {
    std::string text;
    for (double bps : values) text += fmt::format("{}{:.0f}", text.empty() ? "" : "/", bps / 1e6);
    return text;
  };
  // Each round's figure over the 2-DC figure of the same round, then the median: drift between rounds cancels.
  auto ratio_to_first = [](const std::vector<std::vector<double>>& bps, std::size_t i) {
    std::vector<double> ratios;
    for (std::size_t round = 0; round < bps[i].size(); ++round) ratios.push_back(bps[i][round] / bps[0][round]);
    return em::median(ratios);
  };
  const double base_setup = beds[0]->up_seconds();
  for (std::size_t i = 0; i < beds.size(); ++i) {
    const double unshaped_ratio = ratio_to_first(unshaped, i), shaped_ratio = ratio_to_first(shaped, i);
    std::string target = "(anchor)", result = "-";
    if (i > 0) {
      target = ">= 95% of 2 DCs (both)";
      result = check(fmt::format("throughput with {} DCs vs 2", sizes[i]), target,
                     fmt::format("unshaped {}, shaped {}", pct(unshaped_ratio), pct(shaped_ratio)),
                     unshaped_ratio >= 0.95 && shaped_ratio >= 0.95);
    }
    table.rows.push_back(
        {std::to_string(sizes[i]), std::to_string(sizes[i] * sizes[i]), fmt::format("{:.2f} s", beds[i]->up_seconds()),
         fmt::format("{:.2f}x", beds[i]->up_seconds() / base_setup),
         fmt::format("{} ({})", mbit(em::median(unshaped[i])), rounds_text(unshaped[i])), pct(unshaped_ratio),
         fmt::format("{} ({})", mbit(em::median(shaped[i])), rounds_text(shaped[i])), pct(shaped_ratio), target,
         result});
  }
  table.notes = {
      "Pairs = DCs squared: every directed pair plus each DC's own (intra-DC) entry in the data plane.",
      "Throughput is between the host of the first and of the last DC; the three testbeds are up together "
      "and measured in interleaved rounds (per-round Mbit/s in brackets). Vs 2 DCs = median over rounds of this "
      "testbed's "
      "figure / the 2-DC figure of the same round. Shaped: that pair set to 1 Gbit/s and 25 ms one way after the "
      "unshaped rounds.",
      "Setup = wall time of `wanlab up` (namespaces, veths, routes, tc program, NFQUEUE rule, daemon start)."};
  return table;
}

// ---------------------------------------------------------------- main

Config parse_args(int argc, char** argv) {
  Config config;
  config.wanlab = (fs::path(base::self_exe()).parent_path().parent_path() / "cli" / "wanlab").string();
  config.sections = {"rtt", "goodput", "capacity", "conformance", "scale"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": expected a value");
      return argv[++i];
    };
    if (arg == "--wanlab") {
      config.wanlab = value();
    } else if (arg == "--markdown") {
      config.markdown = output_file_option(arg, value());
    } else if (arg == "--note") {
      config.note = value();
    } else if (arg == "--command") {
      config.command = value();
    } else if (arg == "--only") {
      std::set<std::string> chosen;
      std::stringstream list(value());
      for (std::string name; std::getline(list, name, ',');) {
        if (!config.sections.count(name))
          throw std::invalid_argument("--only: unknown section \"" + name +
                                      "\" (rtt, goodput, capacity, conformance, scale)");
        chosen.insert(name);
      }
      config.sections = chosen;
    } else {
      throw std::invalid_argument("unknown argument \"" + arg +
                                  "\" (--wanlab PATH, --markdown FILE, --only LIST, --note TEXT, --command TEXT)");
    }
  }
  config.wanlab = fs::absolute(config.wanlab).string();
  if (::access(config.wanlab.c_str(), X_OK) != 0)
    throw std::invalid_argument("--wanlab: " + config.wanlab + " is not an executable (build the wanlab target)");
  return config;
}

Table summary() {
  Table table;
  table.title = "Targets";
  table.header = {"Target", "Wanted", "Measured", "Result"};
  int passed = 0;
  for (const auto& outcome : outcomes) {
    table.rows.push_back({outcome.what, outcome.target, outcome.measured, verdict(outcome.pass)});
    passed += outcome.pass;
  }
  table.notes = {fmt::format("{} of {} targets met.", passed, outcomes.size())};
  return table;
}

int run(int argc, char** argv) {
  Config config = parse_args(argc, argv);
  if (::geteuid() != 0) throw std::runtime_error("needs root (namespaces, tc, iptables)");
  install_signal_cleanup(config.wanlab);
  WorkDir work("wanlab-bench");
  config.work_dir = work.path;

  const auto start = std::chrono::steady_clock::now();
  const CpuMeter run_cpu(::getpid());
  const MachineInfo machine = machine_info();
  const std::string load_at_start = load_average();
  const int nice_value = ::getpriority(PRIO_PROCESS, 0);
  std::string header = fmt::format(
      "wanlab emulator benchmark, {}\nmachine: {}; {} CPUs ({}); {:.1f} GiB memory\n"
      "load average at start: {}; this process runs at nice {}\nwanlab binary: {}\n",
      now_text(), machine.kernel, machine.cpus, machine.cpu_model, machine.memory_gib, load_at_start, nice_value,
      config.wanlab);
  if (!config.note.empty()) header += "note: " + config.note + "\n";
  fmt::print("{}\n", header);
  std::fflush(stdout);

  const std::vector<std::pair<std::string, std::function<Table(const Config&)>>> sections = {
      {"rtt", rtt_section},
      {"goodput", goodput_section},
      {"capacity", capacity_section},
      {"conformance", conformance_section},
      {"scale", scale_section}};
  std::vector<Table> tables;
  for (const auto& [name, section] : sections) {
    if (!config.sections.count(name)) continue;
    fmt::print("running {} ...\n", name);
    std::fflush(stdout);
    const auto section_start = std::chrono::steady_clock::now();
    tables.push_back(section(config));
    tables.back().notes.push_back(
        fmt::format("Section time: {:.0f} s.",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - section_start).count()));
    fmt::print("\n{}\n", tables.back().text());
    std::fflush(stdout);
  }
  tables.push_back(summary());
  const auto run_usage = run_cpu.read();
  tables.back().notes.push_back(fmt::format(
      "Over the whole run: machine busy {:.0f}%, softirq {:.0f}%, steal {:.0f}% of both CPUs. Other work on the "
      "machine and "
      "steal (the hypervisor running something else) move every figure here; compare ratios within one run.",
      run_usage.system_pct_of_all, run_usage.softirq_pct_of_all, run_usage.steal_pct_of_all));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string load_at_end = load_average();
  fmt::print("{}\nRelease path: {}\nLoad average at start / end: {} / {}\nTotal run time: {:.0f} s\n",
             tables.back().text(), release_path, load_at_start, load_at_end, seconds);

  if (!config.markdown.empty()) {
    wanlab::base::write_output_file(config.markdown, [&](std::ostream& out) {
    out << "# wanlab emulator benchmark\n\n";
    out << fmt::format(
        "- Date: {}\n- Machine: {}; {} CPUs ({}); {:.1f} GiB memory\n- Release path: {}\n- Load average (1/5/15 min) "
        "at start: {}; at end: {}\n"
        "- Benchmark process priority: nice {} (the releaser daemon runs SCHED_FIFO)\n- Run time: {:.0f} s\n"
        "- Command: `{}`\n\n",
        now_text(), machine.kernel, machine.cpus, machine.cpu_model, machine.memory_gib, release_path, load_at_start,
        load_at_end, nice_value, seconds, config.command);
    if (!config.note.empty()) out << "- Note: " << config.note << "\n\n";
    for (const auto& table : tables) out << table.markdown() << "\n";
    });
    fmt::print("markdown written to {}\n", config.markdown);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return wanlab::bench::main_of("wanlab_emulator_bench", run, argc, argv); }
