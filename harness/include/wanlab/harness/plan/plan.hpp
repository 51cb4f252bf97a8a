// The planner: an experiment and its testbed's scenario become one ordered
// operation list per worker (one worker = one emulated GPU group of tp GPUs
// holding one pipeline stage of one data-parallel replica). The same Plan
// drives the real run (wanlab worker) and the simulator (simulate.hpp).
//
// Semantics both runners follow:
// - A worker executes its ops strictly in order, once per iteration.
// - send does not wait for the transfer: the message is handed to the transport
//   and the worker goes on. recv waits until the whole message has arrived.
//   Messages are identified by (sender, receiver, microbatch): between two
//   workers only one direction of the pipeline flows (activations up a stage,
//   gradients down), so that triple is unique per iteration.
// - allreduce waits for every member of its ring (allreduce_group: the same
//   stage of every replica; dc_group with within_dc) and returns when the ring
//   all-reduce is done; an `overlapped` one starts the ring and goes on at
//   once, and allreduce_wait waits for its end. An all-reduce is named by its
//   ring and its number (Op::microbatch), the same on every member.
// - Worker ids are replica x pp + stage; plan.workers[id].worker.id == id.
// The formulas are in docs/PLANNER.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"

namespace wanlab::harness {

enum class OpKind {
  forward,         // compute: forward of `microbatch`
  backward,        // compute: backward of `microbatch`
  send,            // bytes to `peer` (activations forward, activation gradients backward)
  recv,            // bytes from `peer`
  allreduce,       // ring all-reduce of the stage's gradients among `group` (end of iteration)
  allreduce_wait,  // waits for the overlapped all-reduce numbered `microbatch`
};

struct Op {
  OpKind kind = OpKind::forward;
  // The microbatch of compute and messages (DiLoCo: inner step x microbatches
  // + microbatch); for allreduce and allreduce_wait the all-reduce's number:
  // -1 for the one of gpipe, 1f1b and atlas; DiLoCo's in-DC all-reduce of
  // inner step t is t, the outer sync of fragment f is inner_steps + f.
  int microbatch = -1;
  int peer = -1;                  // worker id for send/recv
  std::uint64_t bytes = 0;        // send/recv: message size; allreduce: bytes this worker sends in the ring
  std::uint64_t duration_ns = 0;  // forward/backward: compute time
  bool cross_dc = false;          // send/recv: the peer is in another DC; allreduce: the ring spans DCs
  // Temporal sharing: transfers on one directed WAN link go one at a time in
  // increasing `link_slot` (per iteration, 0, 1, 2, ... without gaps): slot k
  // starts once slot k - 1's last byte is sent. Set on the send and on its
  // recv; -1 when not shared or not cross-DC (and on allreduce).
  int link_slot = -1;
  bool within_dc = false;   // allreduce: over Worker::dc_group, not allreduce_group
  bool overlapped = false;  // allreduce: started in the background (allreduce_wait ends it)
};

struct Worker {
  int id = 0;
  int stage = 0;
  int replica = 0;  // data-parallel index
  int dc = 0;       // index into the scenario's DCs
  std::string dc_name;
  // The emulated host it runs on ("east-0"). A host stands for a multi-GPU
  // server: a stage's replicas in one DC share one (their all-reduce stays on
  // it), and stages go round-robin over the DC's hosts.
  std::string host;
  std::vector<int> allreduce_group;  // worker ids of the same stage in ring order, grouped by DC
  std::vector<int> dc_group;         // DiLoCo: those of allreduce_group in this worker's DC
};

struct WorkerPlan {
  Worker worker;
  std::vector<Op> ops;  // one iteration, in execution order
};

struct Plan {
  Experiment experiment;
  std::vector<std::string> dc_names;  // the testbed's DCs, by index
  // DC index per stage of replica 0; with dp-across-dc each replica has its own
  // DC, so Worker::dc is the authority.
  std::vector<int> stage_dc;
  std::vector<WorkerPlan> workers;
  std::uint64_t activation_bytes = 0;   // per microbatch between adjacent stages (b x s x h x bytes), scaled
  std::uint64_t stage_param_bytes = 0;  // parameters of one stage x bytes, scaled
  std::uint64_t allreduce_bytes = 0;    // what one worker sends in its ring: 2(R-1)/R x stage_param_bytes
  // DiLoCo: one fragment of a stage's pseudo-gradients at [diloco] outer_bits
  // (stage_param_bytes x outer_bits / (8 x bytes_per_value) / fragments).
  std::uint64_t fragment_bytes = 0;
  std::uint64_t forward_ns = 0;  // per microbatch per stage
  std::uint64_t backward_ns = 0;
  double parameters = 0;  // N = 12 x layers x hidden^2 (no embeddings)
  int gpus_used = 0;      // workers x tp

  int worker_id(int stage, int replica) const { return replica * experiment.parallel.pp + stage; }
};

// How big a run of the experiment is, from its fields alone (before a plan is
// built). A step is one forward, backward, send or recv op, or one ring step
// of an all-reduce (2(dp - 1) per worker). Both runners record one event per
// op, and the simulator handles at most one compute end or arrival per step,
// so steps bound the memory and time of a run. Every stage runs 2m compute ops
// and each of the pp - 1 hops carries 2m messages, a send and a recv each:
// 2m(3pp - 2) ops per replica. With a [fabric], the simulator pipelines the
// ring (simulate.hpp): an all-reduce is one step.
struct PlanSize {
  std::uint64_t steps_per_iteration = 0;  // all workers together
  std::uint64_t ops_per_iteration = 0;    // what a runner records per iteration (<= steps)
};
PlanSize plan_size(const Experiment& experiment);
PlanSize plan_size(const Plan& plan);  // counted: equals the above for a plan from make_plan

// Two sets of limits: what an experiment may ask of the simulator (100,000
// GPUs and more over up to WANLAB_MAX_DCS DCs; the experiment parser, make_plan
// and simulate check these), and what the emulated testbed on one box runs
// (`wanlab train` without --simulate: the coordinator checks those).
inline constexpr int kMaxPp = 1024;
inline constexpr int kMaxDp = 100'000;
inline constexpr std::int64_t kMaxSimulatedWorkers = 131'072;  // pp x dp
// The most steps (steps_per_iteration x iterations) a simulation may take.
inline constexpr std::uint64_t kMaxSimulatedSteps = 20'000'000;
inline constexpr std::int64_t kMaxEmulatedWorkers = 1024;
// The most steps a real run may take. At this limit, `wanlab train --simulate
// --out` peaks below 700 MB (all steps in one iteration: the timeline holds
// every box; 140 MB over many iterations).
inline constexpr std::uint64_t kMaxRunSteps = 2'000'000;

// Throws ExperimentError when the run's steps exceed kMaxSimulatedSteps,
// naming the fields that make it big and the limit. The Plan overload counts
// the plan's own ops (the simulator runs those), the Experiment one the ops it
// will get.
void check_plan_size(const Experiment& experiment, int iterations);
void check_plan_size(const Plan& plan, int iterations);
// The emulated testbed's limits, checked before a real run starts: at most
// kMaxRunSteps steps and kMaxEmulatedWorkers workers, and no [fabric] (the
// testbed's network inside a DC is its [intra_dc] pair). ExperimentError.
void check_emulated_run(const Plan& plan, int iterations);

// Refuses plans beyond kMaxSimulatedSteps (check_plan_size) before building one.
// Throws ExperimentError naming what is missing when the placement is infeasible,
// or the field when a DC in [gpus], the placement list or [prefill] decode_dc is
// not in the testbed.
// With temporal sharing, link slots follow the transfers' start order in a
// simulation without it (ties: lower replica first), so the order never
// contradicts a dependency and cannot deadlock.
Plan make_plan(const Experiment& experiment, const emulator::Scenario& scenario);

// Atlas DC selection (Algorithm 1): DCs sorted by available GPUs, largest
// first (ties in [gpus] order); each takes floor(GPUs / (tp x dp)) consecutive
// stages with all their replicas, until every stage is placed. Beyond the
// algorithm, with `order_by_latency` the selected DCs' blocks of stages are
// then ordered so that the sum of round trips between consecutive blocks is
// least (exhaustive for up to 8 DCs, beyond that the shortest nearest-neighbour
// chain from any first DC; ties keep Algorithm 1's order). `gpus`
// empty: every testbed DC has pp x dp x tp GPUs. Returns the DC index per
// stage; throws ExperimentError when the GPUs do not suffice.
std::vector<int> select_dcs(const std::vector<std::pair<std::string, int>>& gpus, int pp, int dp, int tp,
                            const emulator::Scenario& scenario, bool order_by_latency = true);

struct ComputeStep {
  bool forward = true;
  int microbatch = 0;
};

// Compute order of one stage (gpipe: all F then all B; 1f1b, atlas and DiLoCo's inner steps:
// min(p - s - 1, m) warm-up forwards, then F/B pairs, then the remaining
// backwards; stage 0 of p = 4, m = 8: F0 F1 F2 F3 B0 F4 B1 ... F7 B4 B5 B6 B7).
std::vector<ComputeStep> compute_steps(Schedule schedule, int stages, int microbatches, int stage);
// The same as "F0", "B0", ...
std::vector<std::string> compute_order(Schedule schedule, int stages, int microbatches, int stage);

// N = 12 x layers x hidden^2: attention (4h^2) and MLP (8h^2) weights per layer;
// embeddings and the output layer are left out so that every stage is equal.
double parameter_count(const Model& model);

std::string to_string(OpKind kind);
// All-reduce `number` (Op::microbatch) as reports name it: "all-reduce";
// DiLoCo's "in-DC all-reduce, step 3" and "outer sync, fragment 1 of 4".
std::string allreduce_name(const Experiment& experiment, int number);

}  // namespace wanlab::harness
