// The real run of a Plan: one `wanlab worker` process per worker (emulated
// GPU group) in a container on its emulated host, real bytes through the
// emulated WAN, and a coordinator in the calling process.
//
// The coordinator listens on a Unix socket in the run's control directory,
// launches the workers through a WorkerRuntime, hands each its plan and its
// peers' addresses, starts every iteration (a barrier), grants WAN links in
// slot order when temporal sharing is on (LinkGate), and gathers the events
// the workers timestamp (CLOCK_MONOTONIC, comparable across the processes of
// one machine). Any worker failure, malformed frame, unexpected exit or
// timeout stops the run: every worker is stopped, the error names the worker
// and why, and nothing is left behind.
//
// Workers compute by holding their EmulatedGpu busy for the planned duration;
// sends are asynchronous (the worker goes on while its bytes travel), recvs
// wait for the whole message, allreduce is a ring (2(n-1) steps over the
// ring neighbours' channels). Cross-DC channels use the experiment's number
// of TCP streams, intra-DC channels one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/run/runtime.hpp"

namespace wanlab::harness {

// A run that did not finish: what() names the worker and the reason.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// After each iteration.
struct Progress {
  int iteration = 0;  // 0-based, just finished
  int iterations = 0;
  double iteration_s = 0;
  double utilization_so_far = 0;  // mean GPU utilization over the finished iterations (training only)
  // With [prefill] enabled: training + prefill, and the requests so far.
  std::optional<double> utilization_with_prefill_so_far;
  int requests_served = 0;
  int requests_waiting = 0;
  int requests_rejected = 0;
  std::optional<double> ttft_p50_s;  // of the requests served so far
};

// `wanlab train --idle-poll`: base::IdlePollers never, always, or while the
// run's work leaves the CPUs mostly idle (HealthProbe's rule).
enum class IdlePoll { off, on, automatic };
// "auto", "on", "off"; std::invalid_argument otherwise.
IdlePoll parse_idle_poll(const std::string& text);

struct RunOptions {
  RuntimeChoice runtime = RuntimeChoice::automatic;
  std::string image;  // podman: a prebuilt image instead of a root file system from `exe`
  std::string exe;    // the wanlab binary workers run; default: this process's
  // Seconds to wait for every worker to connect and open its channels.
  std::chrono::seconds startup_timeout{90};
  // Per iteration; 0: 30 s plus ten times the simulated iteration time.
  std::chrono::seconds iteration_timeout{0};
  emulator::ReleaseChoice release = emulator::ReleaseChoice::automatic;
  // Keep this machine's idle CPUs spinning while the run runs, so that its
  // timers wake sooner on a VM (base/idle_poll.hpp), from a cpu cgroup of
  // their own marked idle. A trade (docs/RUNTIME.md#idle-polling): automatic
  // polls only while the run's own work leaves the CPUs mostly idle.
  IdlePoll idle_poll = IdlePoll::automatic;
  std::function<void(const std::string&)> log;  // steps; may be empty
  std::function<void(const Progress&)> progress;
  // RuntimeChoice::slurm (run_on_machines fills these): the address the
  // coordinator listens on (host byte order), each plan host's Slurm node.
  std::uint32_t control_ipv4 = 0;
  std::map<std::string, std::string> slurm_nodes;
  // Which testbed of `wanlab join` this machine is part of; default: $WANLAB_TESTBED.
  std::string testbed;
};

// Runs `plan` on a testbed that is up (its hosts' network namespaces and
// addresses from `testbed`). Its control directory and root file system go
// under the testbed's run directory and are removed before returning.
// Throws RunError; ExperimentError, before any worker starts, for a run
// beyond kMaxRunSteps (check_plan_size).
RunRecord run_plan(const Plan& plan, const emulator::Scenario& scenario, const emulator::TestbedState& testbed,
                   const RunOptions& options);

// `wanlab train`: the scenario scaled by the experiment (scale_scenario),
// a testbed of its own brought up, run_plan, the testbed torn down whatever
// happened (also on SIGINT/SIGTERM). Throws RunError / ExperimentError /
// emulator errors.
RunRecord run_experiment(const Experiment& experiment, const emulator::Scenario& scenario, const RunOptions& options);

// The scenario `wanlab train` brings its testbed up with: scale_scenario at
// the experiment's scale, byte-sized queues kept at least `min_queue_bytes`
// (queue_floor_bytes, link_model.hpp), seeded with the experiment's seed (the emulated
// WAN's loss and jitter draws: a run has one seed, the experiment's).
emulator::Scenario run_scenario(const Experiment& experiment, const emulator::Scenario& scenario,
                                std::uint64_t min_queue_bytes = 0);

// A testbed name for a run: a prefix of the scenario's name and our pid.
std::string run_testbed_name(const emulator::Scenario& scenario);

// `wanlab worker`: connects to the coordinator at `control_socket` as worker
// `id` and runs what it is told. Returns the exit code (0 after a normal stop).
int worker_main(const std::string& control_socket, int id);

// `wanlab prefill-worker` (BubbleTea): borrows worker `id`'s emulated GPU in
// its bubbles for the prefill chunks the coordinator places there, and sends
// each batch's KV cache to the decode sink. Returns the exit code.
int prefill_worker_main(const std::string& control_socket, int id);
// `wanlab decode-sink`: receives the KV caches on a host of the decode DC and
// reports when each has fully arrived.
int decode_sink_main(const std::string& control_socket, int sink);

}  // namespace wanlab::harness
