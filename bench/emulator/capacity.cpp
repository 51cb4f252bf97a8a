// The emulator benchmark's capacity sections: what it carries unshaped
// against plain forwarding, and how setup and throughput scale with DCs.
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

// ---------------------------------------------------------------- capacity

Table capacity_section(const Config& config, Findings& findings) {
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
  findings.note_release(bed);
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
      base::check_interrupted();
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
        result = findings.check(
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

// ---------------------------------------------------------------- scale

Table scale_section(const Config& config, Findings& findings) {
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
    findings.note_release(*beds.back());
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
        base::check_interrupted();
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
      result = findings.check(fmt::format("throughput with {} DCs vs 2", sizes[i]), target,
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

}  // namespace wanlab::bench::emu
