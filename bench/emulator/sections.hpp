// The emulator benchmark's sections (bench/emulator_bench.cpp runs them): each
// brings up its testbeds, measures, and returns its table, recording each
// target it checks in Findings for the summary.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/releaser.hpp"

namespace wanlab::bench::emu {

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

// What the sections find besides their tables.
struct Findings {
  std::vector<Outcome> outcomes;
  std::string release_path;  // as the first testbed reported it

  void note_release(const Testbed& bed);
  // Records the target and returns its verdict ("PASS" | "MISS").
  std::string check(const std::string& what, const std::string& target, const std::string& measured, bool pass);
};

Table rtt_section(const Config& config, Findings& findings);
Table goodput_section(const Config& config, Findings& findings);
Table capacity_section(const Config& config, Findings& findings);
Table conformance_section(const Config& config, Findings& findings);
Table scale_section(const Config& config, Findings& findings);

// What the sections share.
emulator::Endpoint endpoint(const emulator::Host& host);
ScenarioSpec spec_of(const std::string& name, int dcs, const std::string& delay,
                     std::optional<std::string> rate = std::nullopt);
std::string mbit(double bps);
std::string pct(double fraction);
void pause_for(std::chrono::milliseconds time);
// "busy / softirq / steal" of the machine's CPUs.
std::string machine_load(const CpuMeter::Usage& usage);
std::string limited_share(const emulator::SenderTcpInfo& info);
// The releaser's counters move once a second; waits for the last update to cover a run.
emulator::ReleaserStats releaser_after_run(const std::string& testbed);
std::string mean_lateness(const emulator::ReleaserStats& before, const emulator::ReleaserStats& after);

}  // namespace wanlab::bench::emu
