#include "soak/verdicts.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace wanlab::bench::soak {
namespace {

// The least-squares slope of RSS (KiB) over time (minutes).
double slope_kib_per_min(const std::vector<double>& minutes, const std::vector<double>& kib) {
  if (minutes.size() < 2) return 0;
  double mt = 0, mr = 0;
  for (std::size_t i = 0; i < minutes.size(); ++i) mt += minutes[i], mr += kib[i];
  mt /= static_cast<double>(minutes.size());
  mr /= static_cast<double>(minutes.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < minutes.size(); ++i)
    num += (minutes[i] - mt) * (kib[i] - mr), den += (minutes[i] - mt) * (minutes[i] - mt);
  return den > 0 ? num / den : 0;
}

// Memory: RSS from the end of the warm-up on; descriptors no more at the end
// than after the warm-up. Both fail without rows.
bool memory_verdict(const Config& config, const std::vector<Row>& rows, std::vector<std::string>& summary) {
  const Row* warm = nullptr;
  for (const auto& row : rows)
    if (row.t >= config.warmup_seconds) {
      warm = &row;
      break;
    }
  if (!warm && !rows.empty()) warm = &rows.back();
  if (!warm) return false;
  double rss_max = 0;
  int fds_max = 0;
  std::vector<double> minutes, kib;
  for (const auto& row : rows) {
    if (row.t < warm->t) continue;
    rss_max = std::max(rss_max, row.daemon.rss_mib);
    fds_max = std::max(fds_max, row.daemon.fds);
    minutes.push_back(row.t / 60.0);
    kib.push_back(row.daemon.rss_mib * 1024.0);
  }
  const double allowed = std::max(2.0, 0.05 * warm->daemon.rss_mib);
  const bool memory_flat = rss_max - warm->daemon.rss_mib <= allowed;
  const bool fds_flat = rows.back().daemon.fds <= warm->daemon.fds;
  summary.push_back(fmt::format(
      "Memory: releaser RSS {:.2f} MiB at t={:.0f}s (first row), {:.2f} MiB after the warm-up "
      "(t={:.0f}s), {:.2f} MiB at the end, at most {:.2f} "
      "MiB after the warm-up: growth {:+.2f} MiB, allowed {:.2f} MiB (2 MiB or 5%, the larger); trend "
      "{:+.1f} KiB/min -> {}",
      rows.front().daemon.rss_mib, rows.front().t, warm->daemon.rss_mib, warm->t, rows.back().daemon.rss_mib, rss_max,
      rss_max - warm->daemon.rss_mib, allowed, slope_kib_per_min(minutes, kib), memory_flat ? "FLAT" : "GROWS"));
  summary.push_back(fmt::format("Descriptors: {} after the warm-up, {} at the end, at most {} -> {}", warm->daemon.fds,
                                rows.back().daemon.fds, fds_max, fds_flat ? "FLAT" : "GROWS"));
  return memory_flat && fds_flat;
}

std::string cpu_line(const std::vector<Row>& rows) {
  double cpu_sum = 0, cpu_max = 0;
  std::uint64_t verdicts = 0;
  for (const auto& row : rows) {
    cpu_sum += row.cpu.process_pct_of_core, cpu_max = std::max(cpu_max, row.cpu.process_pct_of_core);
    verdicts += row.verdicts;
  }
  return fmt::format("Releaser CPU: mean {:.1f}%, max {:.1f}% of a core over {} rows; {} verdicts",
                     rows.empty() ? 0.0 : cpu_sum / static_cast<double>(rows.size()), cpu_max, rows.size(), verdicts);
}

// Only configured drops: none unexplained in the data plane, none in the
// kernel's NFQUEUE or on an interface.
bool drops_verdict(const Observed& observed, std::vector<std::string>& summary) {
  DropCounts drops;
  int slices = 0, queue_ruled_out = 0, loss_ruled_out = 0;
  for (const auto& pair : observed.pairs) {
    drops += {pair.queue_expected, pair.queue_unexpected, pair.loss_expected, pair.loss_unexpected};
    if (pair.wan)
      slices += pair.slices, queue_ruled_out += pair.slices_queue_ruled_out,
          loss_ruled_out += pair.slices_loss_ruled_out;
  }
  std::uint64_t kernel_full = 0, kernel_undelivered = 0, iface = 0;
  for (const auto& row : observed.rows)
    kernel_full += row.kernel_queue_full, kernel_undelivered += row.kernel_undelivered, iface += row.iface_drops;
  const bool ok = drops.queue_unexpected == 0 && drops.loss_unexpected == 0 && kernel_full == 0 &&
                  kernel_undelivered == 0 && iface == 0;
  summary.push_back(
      fmt::format("Drops: queue {} expected / {} unexpected, loss {} expected / {} unexpected; NFQUEUE kernel drops {} "
                  "(queue full) + {} (undelivered); "
                  "interface drops {}; queue drops were ruled out in {} of {} WAN pair-seconds, loss drops in {} -> {}",
                  drops.queue_expected, drops.queue_unexpected, drops.loss_expected, drops.loss_unexpected, kernel_full,
                  kernel_undelivered, iface, queue_ruled_out, slices, loss_ruled_out,
                  ok ? "ONLY CONFIGURED DROPS" : "UNEXPLAINED DROPS"));
  return ok;
}

std::string leftovers_line(const Observed& observed) {
  return observed.leftovers.empty()
             ? fmt::format("Leftovers after `wanlab down` ({:.1f} s): none -> NOTHING LEFT", observed.down_seconds)
             : fmt::format("Leftovers after `wanlab down`: {} -> LEFTOVERS", fmt::join(observed.leftovers, "; "));
}

// The long streams kept up; what the short clients and host processes did.
bool streams_verdict(const Observed& observed, std::vector<std::string>& summary) {
  const LoadTotals& load = observed.load;
  const bool ok = load.long_failures == 0;
  summary.push_back(
      fmt::format("Streams: {} long perf clients, {} ended early ({} restarted) -> {}; short clients {} started, {} "
                  "finished, {} killed "
                  "on purpose, {} failed",
                  Load::kLongClients, load.long_failures, load.long_restarts, ok ? "KEPT UP" : "BROKE",
                  load.short_started, load.short_finished, load.short_killed, load.short_failed));
  summary.push_back(fmt::format(
      "Host processes: {} sleepers started ({} SIGTERMed, {} SIGKILLed, the rest left for `down`), {} `setsid -f "
      "sleep` "
      "escapes left for `down`; {} processes were in the testbed's namespaces at `down`",
      load.sleepers_started, load.sleepers_termed, load.sleepers_killed, load.escapes, observed.processes_at_down));
  return ok;
}

// The first minute's `set` calls against the last minute's.
void set_line(const LoadTotals& load, std::vector<std::string>& summary) {
  if (load.set_ms.empty()) return;
  const auto minute = static_cast<std::ptrdiff_t>(std::min<std::size_t>(60, load.set_ms.size()));
  auto first = [&](const std::vector<double>& all) { return mean({all.begin(), all.begin() + minute}); };
  auto last = [&](const std::vector<double>& all) { return mean({all.end() - minute, all.end()}); };
  summary.push_back(
      fmt::format("`wanlab set`: {} calls, {} failed; CPU time {:.1f} ms each over the first {} calls, {:.1f} ms "
                  "over the last {} "
                  "(wall {:.0f} ms, {:.0f} ms: the machine's load)",
                  load.sets, load.set_failures, first(load.set_cpu_ms), minute, last(load.set_cpu_ms), minute,
                  first(load.set_ms), last(load.set_ms)));
}

// Under the verdict: the first unexplained drops of each pair, and every error.
void details(const Observed& observed, std::vector<std::string>& summary) {
  for (const auto& pair : observed.pairs)
    for (std::size_t i = 0; i < pair.unexplained.size() && i < 5; ++i)
      summary.push_back(fmt::format("  unexplained on {}: {}", pair.label, pair.unexplained[i]));
  for (const auto& error : observed.load.long_errors) summary.push_back("  " + error);
  for (const auto& error : observed.load.short_errors) summary.push_back("  " + error);
  for (const auto& error : observed.load.set_errors) summary.push_back("  " + error);
}

}  // namespace

Verdicts judge(const Config& config, const Observed& observed) {
  Verdicts verdicts;
  auto& summary = verdicts.summary;
  const bool memory_ok = memory_verdict(config, observed.rows, summary);
  summary.push_back(cpu_line(observed.rows));
  const bool drops_ok = drops_verdict(observed, summary);
  summary.push_back(leftovers_line(observed));
  const bool streams_ok = streams_verdict(observed, summary);
  set_line(observed.load, summary);
  verdicts.pass = memory_ok && drops_ok && observed.leftovers.empty() && streams_ok && observed.load.set_failures == 0;
  summary.push_back(
      fmt::format("Verdict: {}", verdicts.pass ? "PASS (memory flat, only configured drops, nothing left)" : "FAIL"));
  details(observed, summary);
  return verdicts;
}

}  // namespace wanlab::bench::soak
