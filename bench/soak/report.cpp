#include "soak/report.hpp"

#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include "soak/changes.hpp"
#include "soak/drops.hpp"
#include "wanlab/base/files.hpp"

namespace wanlab::bench::soak {

std::vector<std::string> row_cells(const Row& row) {
  return {fmt::format("{:.0f}", row.t),
          fmt::format("{:.1f}", row.cpu.process_pct_of_core),
          fmt::format("{:.2f}", row.daemon.rss_mib),
          std::to_string(row.daemon.fds),
          std::to_string(row.daemon.threads),
          std::to_string(row.verdicts),
          std::to_string(row.held),
          std::to_string(row.wan_packets),
          fmt::format("{:.1f}", row.wan_mbit),
          fmt::format("{} / {}", row.drops.queue_expected, row.drops.queue_unexpected),
          fmt::format("{} / {}", row.drops.loss_expected, row.drops.loss_unexpected),
          fmt::format("{} / {}", row.kernel_queue_full, row.kernel_undelivered),
          std::to_string(row.iface_drops),
          fmt::format("{:.1f} / {:.0f} / {:.0f}{}", row.set_cpu_ms_mean, row.set_ms_mean, row.set_ms_max,
                      row.set_failures ? fmt::format(" ({} failed)", row.set_failures) : ""),
          std::to_string(row.host_processes),
          fmt::format("{:.0f}% / {:.0f}%", row.cpu.system_pct_of_all, row.cpu.steal_pct_of_all),
          row.load1};
}

const std::vector<std::string> kHeader = {"t (s)",
                                          "Releaser CPU (% of a core)",
                                          "RSS (MiB)",
                                          "fds",
                                          "Threads",
                                          "Verdicts",
                                          "Held",
                                          "WAN packets",
                                          "WAN Mbit/s",
                                          "Queue drops exp / unexp",
                                          "Loss drops exp / unexp",
                                          "NFQUEUE kernel drops full / undelivered",
                                          "Interface drops",
                                          "`set` CPU ms mean / wall ms mean / max",
                                          "Host processes",
                                          "Machine busy / steal",
                                          "Load 1 min"};

Table rows_table(std::string title, const std::vector<Row>& rows) {
  Table table;
  table.title = std::move(title);
  table.header = kHeader;
  for (const auto& row : rows) table.rows.push_back(row_cells(row));
  return table;
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  base::write_output_file(path, [&](std::ostream& out) {
    out << "t_s,releaser_cpu_pct_of_core,rss_mib,fds,threads,verdicts,held,wan_packets,wan_mbit,queue_drops_expected,"
           "queue_drops_unexpected,"
           "loss_drops_expected,loss_drops_unexpected,nfqueue_queue_full,nfqueue_undelivered,nfqueue_waiting,interface_"
           "drops,set_cpu_ms_mean,"
           "set_ms_mean,set_ms_max,"
           "set_failures,host_processes,machine_busy_pct,machine_softirq_pct,machine_steal_pct,load1\n";
    for (const auto& row : rows)
      out << fmt::format(
          "{:.0f},{:.2f},{:.3f},{},{},{},{},{},{:.2f},{},{},{},{},{},{},{},{},{:.2f},{:.2f},{:.2f},{},{},{:.1f},{:.1f},"
          "{:.1f},{}\n",
          row.t, row.cpu.process_pct_of_core, row.daemon.rss_mib, row.daemon.fds, row.daemon.threads, row.verdicts,
          row.held, row.wan_packets, row.wan_mbit, row.drops.queue_expected, row.drops.queue_unexpected,
          row.drops.loss_expected, row.drops.loss_unexpected, row.kernel_queue_full, row.kernel_undelivered,
          row.waiting_in_kernel, row.iface_drops, row.set_cpu_ms_mean, row.set_ms_mean, row.set_ms_max,
          row.set_failures, row.host_processes, row.cpu.system_pct_of_all, row.cpu.softirq_pct_of_all,
          row.cpu.steal_pct_of_all, row.load1);
  });
  fmt::print("csv written to {}\n", path);
}

namespace {

void markdown_head(std::ostream& out, const Config& config, const RunFacts& facts) {
  out << "# wanlab soak benchmark\n\n";
  out << fmt::format(
      "- Date: {}\n- Machine: {}; {} CPUs ({}); {:.1f} GiB memory\n- Release path: {}\n- Scenario: `{}` brought up as "
      "`{}`\n"
      "- Load average (1/5/15 min) at start: {}; at end: {}\n- Soak: {:.0f} s; whole run {:.0f} s\n- Command: `{}`\n\n",
      now_text(), facts.machine.kernel, facts.machine.cpus, facts.machine.cpu_model, facts.machine.memory_gib,
      facts.release_path, std::filesystem::path(config.scenario).filename().string(), config.name, facts.load_start,
      facts.load_end, config.seconds, facts.run_seconds, config.command);
}

void markdown_what_ran(std::ostream& out, const Config& config) {
  out << "## What ran\n\n"
      << "- **Streams:** a `wanlab perf server` on host 0 of each DC; on host 1 of each DC a `wanlab perf client` to "
         "host 0 of each other DC "
         "(2 streams, cubic) for the whole soak: 6 directed WAN pairs always loaded. Every fourth second a short "
         "client (3 s, 1 stream) from host 0 "
         "to another DC's host 0, every other one SIGKILLed after 1.5 s; at most one at a time.\n"
      << "- **Changes:** every second one `wanlab set` on one DC pair in turn (east-west, east-europe, west-europe), "
         "both directions (every fourth "
         "round one direction, `--one-way`), setting all of rate "
      << fmt::format("{}", fmt::join(kRates, "/")) << ", one-way delay " << fmt::format("{}", fmt::join(kDelays, "/"))
      << ", loss " << fmt::format("{}", fmt::join(kLosses, "/")) << ", jitter "
      << fmt::format("{}", fmt::join(kJitters, "/")) << " and queue " << fmt::format("{}", fmt::join(kQueues, "/"))
      << " on cycles of different lengths.\n"
      << "- **Host processes:** through `wanlab exec`, a `sleep` started every 4 s on the hosts in turn, the oldest "
         "ended (SIGTERM and SIGKILL in "
         "turn) while three run; every 12 s a `setsid -f sleep` that leaves the soak's process tree (12 at most), so "
         "that `down` must find and end "
         "it; the perf servers and the remaining sleepers are left running for `down` too.\n"
      << "- **Samples:** every " << config.sample_seconds
      << " s the daemon's CPU time (/proc/PID/stat), VmRSS and thread count (/proc/PID/status), open descriptors "
         "(/proc/PID/fd), the releaser's "
         "verdict count and held packets (releaser.toml), the kernel's NFQUEUE counters "
         "(/proc/PID/net/netfilter/nfnetlink_queue in the "
         "daemon's namespace), every testbed interface's rx and tx drops (/proc/net/dev in the core and host "
         "namespaces), and the machine's CPU "
         "(/proc/stat).\n\n";
}

void markdown_drop_rules(std::ostream& out, const RunFacts& facts) {
  out << "## When a drop is explained\n\n"
      << "The data plane's counters are read for every directed pair once a second, just before that second's `set`; "
         "each one-second slice is "
         "judged against the configurations in force during it (the one before the `set` and the one after it), read "
         "back from the data plane's "
         "`pair_config` map rather than from what the soak asked for.\n\n"
      << "- **Loss drops** are explained in a slice where the pair's loss probability was above 0.\n"
      << "- **Queue drops** are explained in a slice where the pair's queue limit (in time, as the data plane holds "
         "it) was below the longest "
         "backlog the pair's senders could build: 2 x streams x (tcp_wmem max + 64 KiB) x 1514/1448 x 8 / the slowest "
         "rate the pair has had so "
         "far. A TCP sender holds at most its send buffer unacknowledged (plus one 64 KiB skb of overshoot), every "
         "queued byte was charged at no "
         "less than that slowest rate, and the factor 2 covers segments queued twice (a spurious retransmission). "
         "Here: 3 streams (a long client's "
         "2 + one short client), tcp_wmem max "
      << fmt::format("{:.1f} MiB", static_cast<double>(facts.wmem_bytes) / 1048576.0) << ", so at the slowest rate, "
      << fmt::format("{:.0f} Mbit/s", kSlowestRateBps / 1e6) << ", "
      << fmt::format("{:.1f} s", QueueBound{Load::kWanStreams, facts.wmem_bytes, kSlowestRateBps}.backlog_ns() / 1e9)
      << ": the `12s` queue cannot overflow, and a queue drop under it is unexplained. Every other queue setting here "
         "can overflow.\n"
      << "- **NFQUEUE kernel drops** (the queue full, or a packet's message not delivered to the releaser's socket) "
         "and **interface drops** are "
         "never configured: any is unexplained.\n\n";
}

Table markdown_rows(const Config& config, const std::vector<Row>& rows) {
  Table table = rows_table(
      fmt::format("Every {} s (drops and verdicts in the row's interval; RSS, fds, threads, held at its end)",
                  config.sample_seconds),
      rows);
  table.notes = {
      "Releaser CPU = the daemon's user + system time over the interval, % of one core. Verdicts = packets the "
      "releaser released. "
      "Held = packets waiting in the releaser at the row's end.",
      "WAN packets / Mbit/s = what the data plane passed on the six inter-DC pairs (a GSO packet counts its segments; "
      "wire bytes).",
      "Drops exp / unexp: explained by the configuration in force / not (see above). `set` = each `wanlab set` process "
      "(the change recorded, the data plane rewritten): its own CPU time, and its wall time, which the machine's load "
      "stretches.",
      "Host processes = processes the soak started on the hosts that were running at the row's end (perf servers and "
      "clients, sleepers; "
      "not the escaped ones). Machine busy / steal = both CPUs, all processes and the kernel / taken by the "
      "hypervisor."};
  return table;
}

Table clients_table(const std::vector<ClientReport>& clients) {
  Table table;
  table.title = "Long perf clients (their own reports at the end)";
  table.header = {"Pair", "Exit status", "Seconds", "MB acknowledged", "Goodput (Mbit/s)", "Retransmits"};
  auto cell = [](const std::optional<double>& value, const char* format, double scale) {
    return value ? fmt::format(fmt::runtime(format), *value / scale) : std::string("-");
  };
  for (const auto& c : clients)
    table.rows.push_back({c.label, c.exit_status, cell(c.seconds, "{:.0f}", 1), cell(c.bytes, "{:.0f}", 1e6),
                          cell(c.goodput_bps, "{:.1f}", 1e6), cell(c.retransmits, "{:.0f}", 1)});
  return table;
}

}  // namespace

void write_markdown(const Config& config, const RunFacts& facts, const Verdicts& verdicts, const std::vector<Row>& rows,
                    const std::vector<ClientReport>& clients) {
  base::write_output_file(config.markdown, [&](std::ostream& out) {
    markdown_head(out, config, facts);
    out << "## Summary\n\n";
    for (const auto& line : verdicts.summary) out << "- " << line << "\n";
    out << "\n";
    markdown_what_ran(out, config);
    markdown_drop_rules(out, facts);
    out << markdown_rows(config, rows).markdown() << "\n";
    out << clients_table(clients).markdown();
  });
  fmt::print("markdown written to {}\n", config.markdown);
}

}  // namespace wanlab::bench::soak
