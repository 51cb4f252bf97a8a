// `wanlab plan`: given an experiment's model, compute, free GPUs per DC
// ([gpus]) and its testbed's WAN, search the plans (tp, pp, dp, microbatches,
// Atlas's DC selection with Algorithm 1's order or ordered by latency) and
// rank them by simulated iteration time, with utilization and the WAN egress
// cost per iteration ([egress], egress.hpp). docs/PLANNER.md.
//
// The search keeps the experiment's global batch (dp x microbatches
// sequences of `microbatch`): a plan with dp replicas runs batch / dp
// microbatches, so iteration times compare like for like. Candidates:
// - tp: 1, 2, 4, ... up to the fabric's GPUs per server (8 without one);
// - pp: divisors of the layers; a candidate is kept only where its stage fits
//   a GPU by the one memory rule `wanlab train` checks (fits_memory,
//   served_model.hpp), the served model counted when [prefill] is on;
// - dp: the two largest divisors of the batch whose pp x dp x tp GPUs Atlas's
//   Algorithm 1 can place on the free GPUs;
// - placement: Algorithm 1's DC order, and ordered by latency (select_dcs).
// Given compute times ([compute] forward_ms, backward_ms) scale with the
// experiment's pp x tp over the candidate's; FLOPs-derived ones follow.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "wanlab/base/files.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/report/line_plot.hpp"

namespace wanlab::harness {

struct PlanCandidate {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int microbatches = 1;
  bool ordered = false;  // select_dcs's latency ordering on top of Algorithm 1
  bool operator==(const PlanCandidate&) const = default;
};

struct PlanOutcome {
  PlanCandidate candidate;
  int gpus = 0;
  std::vector<std::string> stage_dcs;  // per stage
  double iteration_s = 0;
  double utilization = 0;
  double tokens_per_s = 0;
  double wan_gb = 0;      // per iteration, at full size (the experiment's scale undone)
  double egress_usd = 0;  // per iteration: wan bytes x [egress] price of each pair
};

struct PlannerReport {
  std::vector<PlanOutcome> ranked;  // fastest first
  int skipped = 0;                  // candidates make_plan refused (size, placement)
  // The experiment's own tp, pp, dp with Algorithm 1's order, if it simulated.
  std::optional<PlanOutcome> algorithm1;
};

struct PlannerOptions {
  std::function<void(const std::string&)> progress;  // one line per simulated candidate, in order
  // Candidates simulated at once, on as many threads; the report and the
  // progress lines are the same for any number.
  int jobs = 1;
};

// Throws ExperimentError when the experiment has no [gpus] (the free GPUs are
// what is searched over) or an [egress] pair names a DC the testbed lacks.
std::vector<PlanCandidate> plan_candidates(const Experiment& experiment, const emulator::Scenario& scenario);
PlannerReport search_plans(const Experiment& experiment, const emulator::Scenario& scenario,
                           const PlannerOptions& options = {});

// The experiment with a candidate's tp, pp, dp, microbatches and placement
// (Atlas, reorder_dcs = ordered), one iteration (two when the experiment runs
// several: the means skip the first); given compute times scaled.
Experiment with_candidate(const Experiment& experiment, const PlanCandidate& candidate);

// The ranking as a table (the first `top` rows), then where ordering by
// latency beats Algorithm 1's order and by how much, and the best plan
// against the experiment's own shape under Algorithm 1.
std::string planner_table(const PlannerReport& report, std::size_t top);

// `wanlab plan --out`: every simulated plan, fastest first, one CSV row each
// (rank, tp, pp, dp, microbatches, DC order, stages, GPUs, iteration_s,
// gpu_utilization, tokens_per_s, wan_gb, egress_usd, own_shape).
std::string planner_csv(const PlannerReport& report);
// Iteration time and GPU utilization against egress $ per iteration, one
// point per plan (a colour per DC order), the Pareto front joined and
// labelled with its shapes, the experiment's own shape under Algorithm 1 a
// point of its own. Empty when no plan simulated.
std::vector<LinePlot> planner_plots(const PlannerReport& report);
// DIR/plans.csv and, when a plan simulated, DIR/plans.svg (line_plots_svg of
// planner_plots); returns the files written. base::FileError naming a file
// that cannot be written.
std::vector<std::string> write_planner_files(const PlannerReport& report, const base::OutputDir& dir);

}  // namespace wanlab::harness
