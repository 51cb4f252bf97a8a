// What the emulator benchmark needs besides the probes: running the `wanlab`
// binary, testbeds that always go down, generated scenarios, CPU and releaser
// counters, machine facts and tables printed as text and markdown.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::bench {

struct CommandResult {
  int status = 0;          // exit status, 128 + signal if killed
  std::string output;      // stdout and stderr together
  double seconds = 0;      // wall time
  double cpu_seconds = 0;  // its user + system time (not its children's)
};

// Runs argv (no shell), capturing its output; the child gets default signal
// dispositions and an empty signal mask whatever ours are.
CommandResult run_command(const std::vector<std::string>& argv);

// Starts argv (no shell) without waiting: stdout and stderr go to
// `output_path` (appended; "" = /dev/null), stdin is /dev/null, and the child
// gets default signal dispositions and an empty signal mask. Returns its pid;
// the caller reaps it.
pid_t spawn_command(const std::vector<std::string>& argv, const std::string& output_path = "");

// SIGINT, SIGTERM and SIGHUP take down every testbed still registered, remove
// the directories given to remove_on_signal, then end the process. Call first
// in main, before any thread starts.
void install_signal_cleanup(const std::string& wanlab_binary);
void remove_on_signal(const std::string& directory);
// Runs `action` too on such a signal (after the testbeds and before the
// directories, the latest registered first), until forget_on_signal(id) with
// the id it returns. For what a
// benchmark starts outside a testbed: processes, namespace names, sysctls.
int on_signal(std::function<void()> action);
void forget_on_signal(int id);

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
// `wanlab down` (destructor, or the signal cleanup).
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
  CommandResult down();

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

// An output file a benchmark is told to write (--markdown FILE, --csv FILE),
// checked when the option is read (base::check_output_file), so a bad one
// fails before minutes of measuring: std::invalid_argument naming the option.
std::string output_file_option(const std::string& option, const std::string& path);

// A bench's main: run(argc, argv), or on an exception one line
// "<name>: <what>" on stderr and exit 1.
int main_of(const char* name, int (*run)(int, char**), int argc, char** argv);

}  // namespace wanlab::bench
