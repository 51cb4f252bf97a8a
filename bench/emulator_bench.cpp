// The emulator benchmark: RTT accuracy, TCP goodput against the configured
// rate, capacity against plain forwarding, long-run rate conformance and
// scaling with the number of DCs, each beside its target. Testbeds come up and
// go down through the `wanlab` binary (which also runs their releaser daemons);
// measurements run in-process with wanlab/emulator/probe.hpp.
//
// Usage (root): wanlab_emulator_bench [--wanlab PATH] [--markdown FILE]
//               [--only rtt,goodput,capacity,conformance,scale] [--note TEXT]
//               [--command TEXT]
// The sections are in emulator/ (sections.hpp).
//
// --note: a line about where the figures come from, printed in the header and
// the markdown (bench/run-emulator-bench.sh --vm says they are under TCG);
// --command: the command the markdown says made it.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "emulator/sections.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/interrupts.hpp"

namespace base = wanlab::base;
using namespace wanlab::bench;
using namespace wanlab::bench::emu;

namespace {

using Section = std::function<Table(const Config&, Findings&)>;
const std::vector<std::pair<std::string, Section>> kSections = {{"rtt", rtt_section},
                                                                {"goodput", goodput_section},
                                                                {"capacity", capacity_section},
                                                                {"conformance", conformance_section},
                                                                {"scale", scale_section}};

const Program kProgram{
    "wanlab_emulator_bench",
    "RTT accuracy, TCP goodput, capacity, rate conformance and scaling with DCs, each beside its target (root; "
    "about 6 minutes)",
    {valued("wanlab", "PATH", "the wanlab binary (default: the one built beside this benchmark)"),
     valued("markdown", "FILE", "write the tables there as markdown"),
     valued("only", "LIST", "these sections only, comma-separated: rtt, goodput, capacity, conformance, scale"),
     valued("note", "TEXT", "a line about where the figures come from, in the header and the markdown"),
     valued("command", "TEXT", "the command the markdown says made it (default bench/run-emulator-bench.sh)")},
    ""};

std::string known_section(const std::string& name) {
  for (const auto& [known, section] : kSections)
    if (name == known) return name;
  throw std::invalid_argument("unknown section (rtt, goodput, capacity, conformance, scale)");
}

Config config_of(const Options& options) {
  Config config;
  config.wanlab = wanlab_option(options);
  config.markdown = base::output_file_option(options, "markdown").value_or("");
  config.note = options.get("note").value_or("");
  config.command = options.get("command").value_or(config.command);
  for (const auto& [name, section] : kSections) config.sections.insert(name);
  if (const auto only = list_option(options, "only", known_section))
    config.sections = std::set<std::string>(only->begin(), only->end());
  return config;
}

Table summary(const Findings& findings) {
  Table table;
  table.title = "Targets";
  table.header = {"Target", "Wanted", "Measured", "Result"};
  int passed = 0;
  for (const auto& outcome : findings.outcomes) {
    table.rows.push_back({outcome.what, outcome.target, outcome.measured, verdict(outcome.pass)});
    passed += outcome.pass;
  }
  table.notes = {fmt::format("{} of {} targets met.", passed, findings.outcomes.size())};
  return table;
}

// What the header and the markdown say about the run.
struct RunFacts {
  MachineInfo machine = machine_info();
  std::string load_at_start = load_average();
  std::string load_at_end;
  int nice_value = ::getpriority(PRIO_PROCESS, 0);
  double seconds = 0;
};

void print_header(const Config& config, const RunFacts& facts) {
  std::string header = fmt::format(
      "wanlab emulator benchmark, {}\nmachine: {}; {} CPUs ({}); {:.1f} GiB memory\n"
      "load average at start: {}; this process runs at nice {}\nwanlab binary: {}\n",
      now_text(), facts.machine.kernel, facts.machine.cpus, facts.machine.cpu_model, facts.machine.memory_gib,
      facts.load_at_start, facts.nice_value, config.wanlab);
  if (!config.note.empty()) header += "note: " + config.note + "\n";
  fmt::print("{}\n", header);
  std::fflush(stdout);
}

std::vector<Table> run_sections(const Config& config, Findings& findings) {
  std::vector<Table> tables;
  for (const auto& [name, section] : kSections) {
    if (!config.sections.count(name)) continue;
    base::check_interrupted();
    fmt::print("running {} ...\n", name);
    std::fflush(stdout);
    const auto section_start = std::chrono::steady_clock::now();
    tables.push_back(section(config, findings));
    tables.back().notes.push_back(
        fmt::format("Section time: {:.0f} s.",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - section_start).count()));
    fmt::print("\n{}\n", tables.back().text());
    std::fflush(stdout);
  }
  return tables;
}

void write_markdown(const Config& config, const RunFacts& facts, const Findings& findings,
                    const std::vector<Table>& tables) {
  base::write_output_file(config.markdown, [&](std::ostream& out) {
    out << "# wanlab emulator benchmark\n\n";
    out << fmt::format(
        "- Date: {}\n- Machine: {}; {} CPUs ({}); {:.1f} GiB memory\n- Release path: {}\n- Load average (1/5/15 min) "
        "at start: {}; at end: {}\n"
        "- Benchmark process priority: nice {} (the releaser daemon runs SCHED_FIFO)\n- Run time: {:.0f} s\n"
        "- Command: `{}`\n\n",
        now_text(), facts.machine.kernel, facts.machine.cpus, facts.machine.cpu_model, facts.machine.memory_gib,
        findings.release_path, facts.load_at_start, facts.load_at_end, facts.nice_value, facts.seconds, config.command);
    if (!config.note.empty()) out << "- Note: " << config.note << "\n\n";
    for (const auto& table : tables) out << table.markdown() << "\n";
  });
  fmt::print("markdown written to {}\n", config.markdown);
}

int run(const Options& options) {
  Config config = config_of(options);
  if (::geteuid() != 0) throw std::runtime_error("needs root (namespaces, tc, iptables)");
  const WorkDir work("wanlab-bench");
  config.work_dir = work.path;

  const auto start = std::chrono::steady_clock::now();
  const CpuMeter run_cpu(::getpid());
  RunFacts facts;
  print_header(config, facts);
  Findings findings;
  std::vector<Table> tables = run_sections(config, findings);
  tables.push_back(summary(findings));
  const auto run_usage = run_cpu.read();
  tables.back().notes.push_back(fmt::format(
      "Over the whole run: machine busy {:.0f}%, softirq {:.0f}%, steal {:.0f}% of both CPUs. Other work on the "
      "machine and "
      "steal (the hypervisor running something else) move every figure here; compare ratios within one run.",
      run_usage.system_pct_of_all, run_usage.softirq_pct_of_all, run_usage.steal_pct_of_all));
  facts.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  facts.load_at_end = load_average();
  fmt::print("{}\nRelease path: {}\nLoad average at start / end: {} / {}\nTotal run time: {:.0f} s\n",
             tables.back().text(), findings.release_path, facts.load_at_start, facts.load_at_end, facts.seconds);
  if (!config.markdown.empty()) write_markdown(config, facts, findings, tables);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return main_of(kProgram, run, argc, argv); }
