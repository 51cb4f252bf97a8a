// How big a run is, before anything is built: the bound on the simulator's
// and the coordinator's memory and time.
#include <fmt/format.h>

#include <algorithm>

#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness {
namespace {

[[noreturn]] void fail_too_big(const Experiment& experiment, const PlanSize& size, int iterations, std::uint64_t steps,
                               std::uint64_t limit) {
  // Several fields make a run big: the message names them all, and is placed at
  // the command-line option when --iterations gave the count, else at the file.
  std::string where = experiment.where("iterations");
  if (!where.starts_with("--")) where = experiment.path;
  const std::string rounds =
      is_diloco(experiment.schedule) ? fmt::format(", diloco.inner_steps {}", experiment.diloco.inner_steps) : "";
  throw ExperimentError(fmt::format(
      "{}: the run is too big: iterations {} x {} steps per iteration (parallel.pp {}, parallel.dp {}, "
      "model.microbatches {}{}) = {} steps; at most {} (a step is a forward, backward, send, recv or all-reduce "
      "ring step)",
      where, iterations, size.steps_per_iteration, experiment.parallel.pp, experiment.parallel.dp,
      experiment.model.microbatches, rounds, steps, limit));
}

void check_steps(const Experiment& experiment, const PlanSize& size, int iterations, std::uint64_t limit) {
  std::uint64_t steps = size.steps_per_iteration * static_cast<std::uint64_t>(std::max(iterations, 0));
  if (steps > limit) fail_too_big(experiment, size, iterations, steps, limit);
}

// An all-reduce's steps: its 2(R - 1) ring steps, or one pipelined transfer with a [fabric].
std::uint64_t ring_steps(const Experiment& experiment, std::uint64_t members) {
  if (members <= 1) return 0;
  return experiment.fabric ? 1 : 2 * (members - 1);
}

}  // namespace

PlanSize plan_size(const Experiment& experiment) {
  const auto pp = static_cast<std::uint64_t>(experiment.parallel.pp);
  const auto dp = static_cast<std::uint64_t>(experiment.parallel.dp);
  const auto microbatches = static_cast<std::uint64_t>(experiment.model.microbatches);
  std::uint64_t pipeline_ops = dp * 2 * microbatches * (3 * pp - 2);
  std::uint64_t workers = pp * dp;
  PlanSize size;
  if (is_diloco(experiment.schedule)) {
    // Each inner step: a pipeline pass and an in-DC all-reduce (counted as if
    // every DC held two replicas or more, and as its least ring, of two: the
    // placement decides; check_plan_size(plan) counts the plan's own); each
    // fragment: its outer sync over all dp replicas, and a wait when it overlaps.
    const Diloco& diloco = experiment.diloco;
    const auto steps = static_cast<std::uint64_t>(diloco.inner_steps);
    const auto fragments = static_cast<std::uint64_t>(diloco.fragments);
    const std::uint64_t waits = diloco.overlap_steps > 0 ? fragments : 0;
    size.ops_per_iteration = steps * pipeline_ops + workers * (steps + fragments + waits);
    size.steps_per_iteration = steps * pipeline_ops + workers * (steps * ring_steps(experiment, 2) +
                                                                 fragments * ring_steps(experiment, dp) + waits);
    return size;
  }
  size.ops_per_iteration = pipeline_ops + (dp > 1 ? workers : 0);
  size.steps_per_iteration = pipeline_ops + workers * ring_steps(experiment, dp);
  return size;
}

PlanSize plan_size(const Plan& plan) {
  PlanSize size;
  for (const WorkerPlan& worker_plan : plan.workers) {
    const Worker& worker = worker_plan.worker;
    const std::uint64_t ring = ring_steps(plan.experiment, worker.allreduce_group.size());
    const std::uint64_t dc_ring = ring_steps(plan.experiment, worker.dc_group.size());
    for (const Op& op : worker_plan.ops) {
      ++size.ops_per_iteration;
      size.steps_per_iteration += op.kind == OpKind::allreduce ? (op.within_dc ? dc_ring : ring) : 1;
    }
  }
  return size;
}

void check_plan_size(const Experiment& experiment, int iterations) {
  check_steps(experiment, plan_size(experiment), iterations, kMaxSimulatedSteps);
}

void check_plan_size(const Plan& plan, int iterations) {
  check_steps(plan.experiment, plan_size(plan), iterations, kMaxSimulatedSteps);
}

void check_emulated_run(const Plan& plan, int iterations) {
  const Experiment& experiment = plan.experiment;
  if (experiment.fabric) {
    throw ExperimentError(
        fmt::format("{}: fabric: the emulated testbed's network inside a DC is its [intra_dc] pair; "
                    "an experiment with [fabric] only simulates (wanlab train --simulate)",
                    experiment.where("fabric")));
  }
  if (std::ssize(plan.workers) > kMaxEmulatedWorkers) {
    throw ExperimentError(
        fmt::format("{}: parallel: pp x dp = {} workers; the emulated testbed runs at most {} "
                    "(--simulate takes up to {})",
                    experiment.where("parallel"), plan.workers.size(), kMaxEmulatedWorkers, kMaxSimulatedWorkers));
  }
  check_steps(experiment, plan_size(plan), iterations, kMaxRunSteps);
}

}  // namespace wanlab::harness
