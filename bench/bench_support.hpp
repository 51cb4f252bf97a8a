// What the benchmarks that run testbeds share besides the probes: testbeds
// that always go down (through the `wanlab` binary), generated scenarios,
// processes logged to a file, CPU and releaser counters, machine facts and
// tables printed as text and markdown. Their command lines: bench_options.hpp.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/base/process.hpp"
#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::bench {

// Starts argv (no shell) without waiting, stdin /dev/null, stdout and stderr
// appended to `log` ("" = /dev/null). The Child kills and reaps it if
// dropped before it is waited for.
base::Child spawn_logged(const std::vector<std::string>& argv, const std::string& log = "");

// A scenario the benchmark writes: `dcs` DCs named d0.., `hosts` each, every
// pair with the same settings.
struct ScenarioSpec {
  std::string name;
  int dcs = 2;
  std::string delay = "25ms";
  std::optional<std::string> rate;  // none: unlimited
  std::string queue = "1bdp";
  std::string congestion = "cubic";
  std::string wmem_max = "16mb";
  std::string rmem_max = "32mb";
  std::optional<bool> slow_start_after_idle;  // none: the kernel's default
};
std::string scenario_toml(const ScenarioSpec& spec);

// A testbed brought up with `wanlab up` and always taken down with
// `wanlab down` (the destructor, also when a signal ends the benchmark).
class Testbed {
 public:
  Testbed(const std::string& wanlab_binary, const std::string& work_dir, const ScenarioSpec& spec);
  // A scenario file as it is, brought up under `name` (`wanlab up FILE --name NAME`).
  Testbed(const std::string& wanlab_binary, const std::string& scenario_path, const std::string& name);
  ~Testbed();
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;

  const emulator::TestbedState& state() const { return state_; }
  const std::string& name() const { return state_.name; }
  double up_seconds() const { return up_seconds_; }
  // Endpoint of the first host of DC `dc`.
  emulator::Host host_of_dc(int dc) const;

  // `wanlab set`, in-process: fields like {"delay", "5ms"} for both directions
  // between DCs a and b.
  void set_link(int a, int b, const std::vector<std::pair<std::string, std::string>>& fields) const;
  // Detaches the tc program from every core-side veth: plain forwarding.
  void detach_programs() const;
  // Attaches the testbed's pinned tc program again where detach_programs() removed it.
  void attach_programs() const;
  // `wanlab down` now rather than in the destructor (which then does nothing).
  base::Captured down();

 private:
  bool program_at_ingress() const;
  void bring_up(const std::vector<std::string>& up_argv, const std::string& name);

  std::string wanlab_;
  emulator::TestbedState state_;
  double up_seconds_ = 0;
  bool down_ = false;
};

// CPU time used between construction and read(): by one process (% of one
// core) and by the whole machine (% of all cores).
class CpuMeter {
 public:
  explicit CpuMeter(pid_t process);
  struct Usage {
    double seconds = 0;  // wall time measured over
    double process_pct_of_core = 0;
    double system_pct_of_all = 0;   // busy, all processes and the kernel, incl. steal
    double softirq_pct_of_all = 0;  // packet processing (ours and anyone's) in softirq context
    double steal_pct_of_all = 0;    // time the hypervisor ran something else on our CPUs
  };
  Usage read() const;

 private:
  pid_t process_;
  std::chrono::steady_clock::time_point start_;
  std::uint64_t process_ticks_ = 0;
  std::uint64_t system_busy_ = 0, system_total_ = 0, system_softirq_ = 0, system_steal_ = 0;
};

// The releaser's counters the daemon publishes once a second (releaser.toml,
// read by wanlab/emulator/releaser.hpp); zeros where the file is absent.
emulator::ReleaserStats read_releaser_counters(const std::string& testbed);

// Data-plane counters of the directed pair src -> dst.
struct PairCounters {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t queue_drops = 0;
};
PairCounters read_pair_counters(const std::string& testbed, int src, int dst);

struct MachineInfo {
  std::string kernel;
  std::string cpu_model;
  int cpus = 0;
  double memory_gib = 0;
};
MachineInfo machine_info();
// The 1, 5 and 15 minute load averages: how busy the machine was with other work.
std::string load_average();
std::string now_text();  // "2026-11-23 03:04:31 UTC"

// A private directory /tmp/PREFIX.XXXXXX, removed with the object.
struct WorkDir {
  explicit WorkDir(const std::string& prefix);
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  std::string path;
};

// A table of text cells, printed with aligned columns or as markdown.
struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // printed under the table

  std::string text() const;
  std::string markdown() const;
};

std::string verdict(bool pass);  // "PASS" | "MISS"

}  // namespace wanlab::bench
