// Where workers run: one container per worker, in the network namespace of
// its emulated host.
//
//   podman   `podman run` with --network ns:<host netns>, a root file system
//            made from the running wanlab binary and the shared objects it
//            has loaded (or a prebuilt image, containers/build.sh), and the
//            run's control directory bind-mounted at the same path.
//   sandbox  our own: clone() into new mount, PID and UTS namespaces inside
//            the host's network namespace, pivot_root into the same root
//            file system with the control directory bind-mounted. For
//            machines where no OCI runtime works.
//   slurm    across machines: `srun --overlap` starts each worker on its
//            host's node of the job's allocation (a machine of a scenario
//            over machines that `wanlab join` made part of the WAN); the
//            control channel is TCP, authenticated with the run's secret.
//   external nothing is started: each worker's command is logged, for
//            starting by hand (a debugger) or by another tool; the
//            coordinator waits for the workers to connect.
//
// `automatic` probes podman (runs the worker binary in a throw-away
// container) and falls back to the sandbox, saying why.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wanlab/base/process.hpp"

namespace wanlab::harness {

enum class RuntimeChoice { automatic, podman, sandbox, external, slurm };
// "auto" | "podman" | "sandbox" | "external" | "slurm"; throws std::invalid_argument naming the choices.
RuntimeChoice parse_runtime_choice(std::string_view text);

struct LaunchSpec {
  int worker = 0;
  std::string name;               // unique per run: container name "wanlab-<testbed>-w3"
  std::string hostname;           // "w3-east-0"
  std::string netns;              // the emulated host's network namespace
  std::string host;               // the plan's host ("east-0")
  std::vector<std::string> args;  // after the executable: {"worker", "--control", ...}
};

class WorkerRuntime {
 public:
  virtual ~WorkerRuntime() = default;
  // "podman" or "sandbox": what results.json records.
  virtual std::string name() const = 0;
  // One line: version, or why the preferred runtime was not used.
  virtual std::string detail() const = 0;
  // Starts one worker; returns the pid of our child whose exit is the
  // worker's exit (podman's client, or the sandbox's init = the worker), or
  // -1 when the worker is not our child (external).
  // The child has its own process group, so a Ctrl-C at the terminal
  // reaches only the coordinator, which then stops the workers itself.
  virtual pid_t launch(const LaunchSpec& spec) = 0;
  // Removes what is left of every launched worker (containers of processes
  // that were killed). Never throws.
  virtual void cleanup() noexcept = 0;
};

struct RuntimeSetup {
  RuntimeChoice choice = RuntimeChoice::automatic;
  std::string rootfs_dir;   // made here from `exe` unless `image` is given
  std::string control_dir;  // bind-mounted into every worker at the same path
  std::string exe;          // the wanlab binary
  std::string image;        // podman only: a prebuilt image (containers/build.sh)
  // Files every worker sees over its own, read-only: the testbed's /etc/hosts
  // and /etc/resolv.conf (emulator/testbed.hpp's host identity).
  std::vector<base::HostIdentity::File> etc_files;
  std::function<void(const std::string&)> progress;  // also where `external` tells its commands
  // slurm: each plan host's node, and the run's secret its workers get in
  // their environment (control_auth.hpp).
  std::map<std::string, std::string> slurm_nodes;
  std::string secret_hex;
};

std::unique_ptr<WorkerRuntime> make_runtime(const RuntimeSetup& setup);

// A root file system for a worker: `exe` as /usr/bin/wanlab plus every shared
// object mapped into this process (which runs the same binary), at their
// paths, and empty mount points (proc, dev, sys, etc, run, tmp).
void make_rootfs(const std::string& exe, const std::string& dir);

// Where a worker finds the wanlab binary inside its root file system.
inline constexpr const char* kWorkerExe = "/usr/bin/wanlab";

}  // namespace wanlab::harness
