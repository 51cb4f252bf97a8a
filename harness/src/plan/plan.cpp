// make_plan: model arithmetic, placement, hosts, per-worker op lists and
// temporal-sharing slots.
#include "wanlab/harness/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "plan/placement.hpp"
#include "sim/simulate_internal.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace wanlab::harness {
namespace {

// Messages beyond 1 TiB or compute steps beyond a day mean a typo in the model.
constexpr double kMaxMessageBytes = 1099511627776.0;
constexpr double kMaxComputeNs = 86400e9;

std::uint64_t checked_bytes(double bytes, const Experiment& experiment, std::string_view what) {
  if (bytes > kMaxMessageBytes) {
    throw ExperimentError(fmt::format("{}: model: {} of {:.3g} bytes (after scale); at most 1 TiB",
                                      experiment.where("model"), what, bytes));
  }
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(bytes)));
}

std::uint64_t checked_ns(double ns, const Experiment& experiment, std::string_view what) {
  if (!(ns <= kMaxComputeNs)) {
    throw ExperimentError(fmt::format("{}: compute: {} of {:.3g} s per microbatch; at most a day",
                                      experiment.where("compute"), what, ns / 1e9));
  }
  // Compute always takes some time: link slots rely on a dependency being later.
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(ns)));
}

// What each member of a ring of `members` sends to all-reduce `bytes`: 2(R-1)/R of them.
std::uint64_t ring_bytes(std::uint64_t bytes, std::size_t members) {
  if (members <= 1) return 0;
  const double r = static_cast<double>(members);
  return static_cast<std::uint64_t>(std::llround(2.0 * (r - 1) / r * static_cast<double>(bytes)));
}

void fill_costs(Plan& plan) {
  const Experiment& experiment = plan.experiment;
  const Model& model = experiment.model;
  const Compute& compute = experiment.compute;
  double stage_params = parameter_count(model) / experiment.parallel.pp;
  double tokens = static_cast<double>(model.microbatch) * model.seq_len;
  plan.parameters = parameter_count(model);
  if (compute.forward_ms && compute.backward_ms) {
    plan.forward_ns = checked_ns(*compute.forward_ms * 1e6, experiment, "forward");
    plan.backward_ns = checked_ns(*compute.backward_ms * 1e6, experiment, "backward");
  } else {
    // 2 FLOPs per parameter and token forward, 4 backward, 2 more to recompute
    // the forward: 6N (8N) per token over the whole model.
    double flops_per_second = experiment.parallel.tp * compute.peak_tflops.value_or(0) * 1e12 * compute.mfu.value_or(0);
    double forward_ns = 2 * stage_params * tokens / flops_per_second * 1e9;
    plan.forward_ns = checked_ns(forward_ns, experiment, "forward");
    plan.backward_ns = checked_ns(forward_ns * (compute.recompute ? 3 : 2), experiment, "backward");
  }
  double activation = tokens * model.hidden * model.bytes_per_value * experiment.scale;
  plan.activation_bytes = checked_bytes(activation, experiment, "an activation message");
  plan.stage_param_bytes =
      checked_bytes(stage_params * model.bytes_per_value * experiment.scale, experiment, "a stage's gradients");
  plan.allreduce_bytes = ring_bytes(plan.stage_param_bytes, experiment.parallel.dp);
  if (is_diloco(experiment.schedule)) {
    const Diloco& diloco = experiment.diloco;
    const double outer = stage_params * diloco.outer_bits / 8.0 * experiment.scale / diloco.fragments;
    plan.fragment_bytes = checked_bytes(outer, experiment, "a fragment of the outer sync");
  }
}

void make_workers(Plan& plan, const emulator::Scenario& scenario, const std::vector<std::vector<int>>& dc_of) {
  const Parallel& parallel = plan.experiment.parallel;
  plan.workers.resize(static_cast<std::size_t>(parallel.pp * parallel.dp));
  for (int replica = 0; replica < parallel.dp; ++replica) {
    for (int stage = 0; stage < parallel.pp; ++stage) {
      Worker& worker = plan.workers[static_cast<std::size_t>(plan.worker_id(stage, replica))].worker;
      worker.id = plan.worker_id(stage, replica);
      worker.stage = stage;
      worker.replica = replica;
      worker.dc = dc_of[static_cast<std::size_t>(replica)][static_cast<std::size_t>(stage)];
      worker.dc_name = scenario.dcs[static_cast<std::size_t>(worker.dc)].name;
    }
  }
  // A host stands for one multi-GPU server: the replicas of a stage that share
  // a DC share a host, so their all-reduce runs on the server (loopback, not
  // the emulated network), as over NVLink; stages go round-robin over the
  // DC's hosts, so pipeline hops inside a DC cross its network.
  std::vector<int> next_host(scenario.dcs.size(), 0);
  std::map<std::pair<int, int>, std::string> host_of_stage;  // (dc, stage) -> host
  for (int stage = 0; stage < parallel.pp; ++stage) {
    for (int replica = 0; replica < parallel.dp; ++replica) {
      Worker& worker = plan.workers[static_cast<std::size_t>(plan.worker_id(stage, replica))].worker;
      auto [host, inserted] = host_of_stage.try_emplace({worker.dc, stage});
      if (inserted) {
        int& next = next_host[static_cast<std::size_t>(worker.dc)];
        host->second = fmt::format("{}-{}", worker.dc_name, next);
        next = (next + 1) % scenario.dcs[static_cast<std::size_t>(worker.dc)].hosts;
      }
      worker.host = host->second;
    }
  }
  // Ring order groups each DC's members, so a ring crosses each WAN link once.
  for (int stage = 0; stage < parallel.pp; ++stage) {
    std::vector<const Worker*> members;
    for (int replica = 0; replica < parallel.dp; ++replica) {
      members.push_back(&plan.workers[static_cast<std::size_t>(plan.worker_id(stage, replica))].worker);
    }
    std::stable_sort(members.begin(), members.end(), [](const Worker* a, const Worker* b) { return a->dc < b->dc; });
    std::vector<int> ring;
    for (const Worker* member : members) ring.push_back(member->id);
    for (const Worker* member : members) {
      Worker& worker = plan.workers[static_cast<std::size_t>(member->id)].worker;
      worker.allreduce_group = ring;
      if (!is_diloco(plan.experiment.schedule)) continue;
      for (const Worker* other : members)
        if (other->dc == member->dc) worker.dc_group.push_back(other->id);
    }
  }
}

Op transfer_op(OpKind kind, int microbatch, const Worker& self, const Worker& peer, std::uint64_t bytes) {
  Op op;
  op.kind = kind;
  op.microbatch = microbatch;
  op.peer = peer.id;
  op.bytes = bytes;
  op.cross_dc = self.dc != peer.dc;
  return op;
}

// One pass of the pipeline: the stage's compute in `schedule`'s order with
// its messages; microbatch k is numbered first_microbatch + k.
void add_pipeline_ops(const Plan& plan, Schedule schedule, const Worker& self, int first_microbatch,
                      std::vector<Op>& ops) {
  const Experiment& experiment = plan.experiment;
  const int stages = experiment.parallel.pp;
  auto neighbour = [&](int stage) -> const Worker& {
    return plan.workers[static_cast<std::size_t>(plan.worker_id(stage, self.replica))].worker;
  };
  for (const ComputeStep& step : compute_steps(schedule, stages, experiment.model.microbatches, self.stage)) {
    const int k = first_microbatch + step.microbatch;
    const bool has_upstream = self.stage > 0;
    const bool has_downstream = self.stage < stages - 1;
    Op compute;
    compute.kind = step.forward ? OpKind::forward : OpKind::backward;
    compute.microbatch = k;
    compute.duration_ns = step.forward ? plan.forward_ns : plan.backward_ns;
    if (step.forward) {
      if (has_upstream)
        ops.push_back(transfer_op(OpKind::recv, k, self, neighbour(self.stage - 1), plan.activation_bytes));
      ops.push_back(compute);
      if (has_downstream)
        ops.push_back(transfer_op(OpKind::send, k, self, neighbour(self.stage + 1), plan.activation_bytes));
    } else {
      if (has_downstream)
        ops.push_back(transfer_op(OpKind::recv, k, self, neighbour(self.stage + 1), plan.activation_bytes));
      ops.push_back(compute);
      if (has_upstream)
        ops.push_back(transfer_op(OpKind::send, k, self, neighbour(self.stage - 1), plan.activation_bytes));
    }
  }
}

Op allreduce_op(const Plan& plan, const Worker& self, const std::vector<int>& ring, std::uint64_t bytes, int number) {
  Op allreduce;
  allreduce.kind = OpKind::allreduce;
  allreduce.microbatch = number;
  allreduce.bytes = ring_bytes(bytes, ring.size());
  allreduce.cross_dc = std::any_of(ring.begin(), ring.end(), [&](int id) {
    return plan.workers[static_cast<std::size_t>(id)].worker.dc != self.dc;
  });
  return allreduce;
}

// DiLoCo's outer round: inner_steps passes of 1F1B inside the replica's DC,
// each ending with the in-DC all-reduce of the stage's gradients (number t),
// and the outer sync of each fragment f (number inner_steps + f) over every
// replica of the stage. Fragment f's block of inner steps ends at
// b_f = floor((f + 1) H / F); its sync starts after inner step b_f - 1 -
// overlap_steps and is waited for after inner step b_f - 1 (with no overlap:
// one blocking all-reduce there). Plain DiLoCo is F = 1, no overlap.
void add_diloco_ops(const Plan& plan, const Worker& self, std::vector<Op>& ops) {
  const Diloco& diloco = plan.experiment.diloco;
  const int steps = diloco.inner_steps;
  const int microbatches = plan.experiment.model.microbatches;
  auto block_end = [&](int fragment) {
    return static_cast<int>(static_cast<std::int64_t>(fragment + 1) * steps / diloco.fragments);
  };
  for (int step = 0; step < steps; ++step) {
    add_pipeline_ops(plan, Schedule::one_f_one_b, self, step * microbatches, ops);
    if (self.dc_group.size() > 1) {
      Op inner = allreduce_op(plan, self, self.dc_group, plan.stage_param_bytes, step);
      inner.within_dc = true;
      ops.push_back(inner);
    }
    for (int fragment = 0; fragment < diloco.fragments; ++fragment) {
      const int number = steps + fragment;
      if (step == block_end(fragment) - 1 && diloco.overlap_steps > 0) {
        Op wait;
        wait.kind = OpKind::allreduce_wait;
        wait.microbatch = number;
        ops.push_back(wait);
      }
    }
    for (int fragment = 0; fragment < diloco.fragments; ++fragment) {
      if (step != block_end(fragment) - 1 - diloco.overlap_steps) continue;
      Op outer = allreduce_op(plan, self, self.allreduce_group, plan.fragment_bytes, steps + fragment);
      outer.overlapped = diloco.overlap_steps > 0;
      ops.push_back(outer);
    }
  }
}

void add_ops(Plan& plan) {
  const Experiment& experiment = plan.experiment;
  for (WorkerPlan& worker_plan : plan.workers) {
    const Worker& self = worker_plan.worker;
    if (is_diloco(experiment.schedule)) {
      add_diloco_ops(plan, self, worker_plan.ops);
      continue;
    }
    add_pipeline_ops(plan, experiment.schedule, self, 0, worker_plan.ops);
    if (experiment.parallel.dp > 1)
      worker_plan.ops.push_back(allreduce_op(plan, self, self.allreduce_group, plan.stage_param_bytes, -1));
  }
}

// How many of a directed link's messages take a turn together: as many as
// the link carries at once without slowing one another, each at what its
// streams' windows (or flow caps) allow alone; one where a transfer alone can
// take half the link or more. A window-limited transfer with the link to
// itself leaves most of it idle, and the turns then only serialize: 1F1B on
// one stream, or the many replicas of a stage on one link.
std::size_t messages_per_slot(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model,
                              std::pair<int, int> link) {
  const detail::LinkRate rate = detail::link_rate(plan.experiment, scenario, model, link.first, link.second);
  const double streams = effective_streams(static_cast<double>(plan.activation_bytes), plan.experiment.streams);
  const double one = detail::transfer_cap_bps(rate, streams);
  if (!std::isfinite(rate.capacity_bps) || !(one > 0)) return 1;
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(rate.capacity_bps / one * (1 + 1e-9))));
}

// Temporal sharing: the cross-DC messages of a directed link take turns in
// the order they start in a simulation without sharing (ties: lower replica,
// then lower stage), messages_per_slot of them to a turn (slot). A message
// that depends on another starts strictly later there (compute takes time),
// so the order never makes a transfer wait for one that waits for it; in one
// slot they go together.
void assign_link_slots(Plan& plan, const emulator::Scenario& scenario) {
  LinkModel model = link_model_for(scenario, plan.experiment.scale);
  model.serve_ties_in_turn = false;  // the replicas in step: ties go to the lower replica
  RunRecord ideal = simulate_training(plan, scenario, model, 1);
  using Start = std::tuple<std::int64_t, int, int, int>;  // start, replica, stage, op index
  std::map<std::pair<int, int>, std::vector<Start>> by_link;
  for (const Event& event : ideal.events) {
    if (event.kind != OpKind::send || !event.cross_dc) continue;
    const Worker& sender = plan.workers[static_cast<std::size_t>(event.worker)].worker;
    const Worker& receiver = plan.workers[static_cast<std::size_t>(event.peer)].worker;
    by_link[{sender.dc, receiver.dc}].emplace_back(event.start_ns, sender.replica, sender.stage, event.op_index);
  }
  // (sender, receiver, microbatch) -> slot, for the recvs: one pass over the
  // ops instead of a search of the receiver's ops per message.
  std::map<std::tuple<int, int, int>, int> slot_of_message;
  for (auto& [link, starts] : by_link) {
    std::sort(starts.begin(), starts.end());
    const std::size_t per_slot = messages_per_slot(plan, scenario, model, link);
    for (std::size_t rank = 0; rank < starts.size(); ++rank) {
      const auto& [start, replica, stage, op_index] = starts[rank];
      int sender = plan.worker_id(stage, replica);
      Op& send = plan.workers[static_cast<std::size_t>(sender)].ops[static_cast<std::size_t>(op_index)];
      send.link_slot = static_cast<int>(rank / per_slot);
      slot_of_message[{sender, send.peer, send.microbatch}] = send.link_slot;
    }
  }
  for (WorkerPlan& worker_plan : plan.workers) {
    for (Op& op : worker_plan.ops) {
      if (op.kind != OpKind::recv) continue;
      auto slot = slot_of_message.find({op.peer, worker_plan.worker.id, op.microbatch});
      if (slot != slot_of_message.end()) op.link_slot = slot->second;
    }
  }
}

}  // namespace

double parameter_count(const Model& model) {
  return 12.0 * model.layers * static_cast<double>(model.hidden) * model.hidden;
}

Plan make_plan(const Experiment& experiment, const emulator::Scenario& scenario) {
  check_plan_size(experiment, experiment.iterations);
  Plan plan;
  plan.experiment = experiment;
  for (const emulator::Dc& dc : scenario.dcs) plan.dc_names.push_back(dc.name);
  fill_costs(plan);
  std::vector<std::vector<int>> dc_of = detail::place_workers(experiment, scenario);
  detail::check_decode_dc(experiment, scenario);
  plan.stage_dc = dc_of.front();
  make_workers(plan, scenario, dc_of);
  plan.gpus_used = static_cast<int>(plan.workers.size()) * experiment.parallel.tp;
  add_ops(plan);
  if (experiment.temporal_sharing) assign_link_slots(plan, scenario);
  return plan;
}

}  // namespace wanlab::harness
