// The planner (planner.hpp): candidates from the free GPUs, each planned and
// simulated for one iteration, ranked by iteration time, priced by [egress].
#include "wanlab/harness/tools/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "experiment/egress_config.hpp"
#include "tools/parallel.hpp"
#include "experiment/text.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/model/served_model.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace wanlab::harness {
namespace {

constexpr int kTpWithoutFabric = 8;     // one DGX/HGX server's GPUs
constexpr int kMaxMicrobatches = 4096;  // [model] microbatches' range
constexpr int kDpPerShape = 1;          // the largest dp Algorithm 1 places: all free GPUs it can use
// One iteration, or two where the experiment runs several: the first warms
// the TCP windows up and the means skip it (summarize_run).
constexpr int kMaxIterations = 2;

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> found;
  for (std::int64_t d = 1; d <= n && d <= kMaxDp; ++d) {
    if (n % d == 0) found.push_back(static_cast<int>(d));
  }
  return found;
}

int total_gpus(const Experiment& experiment) {
  int total = 0;
  for (const auto& [dc, count] : experiment.gpus) total += count;
  return total;
}

// The one memory rule (served_model.hpp), on the candidate as `wanlab train`
// would run it: with the experiment's [prefill] when it is on, so that the
// plan ranked first is one train accepts.
bool candidate_fits(const Experiment& experiment, const PlanCandidate& candidate) {
  Experiment planned = with_candidate(experiment, candidate);
  planned.prefill.enabled = experiment.prefill.enabled;
  return fits_memory(planned);
}

std::optional<std::vector<int>> atlas_stages(const Experiment& experiment, const emulator::Scenario& scenario,
                                             const PlanCandidate& candidate) {
  try {
    return select_dcs(experiment.gpus, candidate.pp, candidate.dp, candidate.tp, scenario, candidate.ordered);
  } catch (const ExperimentError&) {
    return std::nullopt;
  }
}

// The largest dp (a divisor of the batch) whose GPUs Algorithm 1 places, then
// the same shape ordered by latency where that changes the DCs' order.
void add_shape(const Experiment& experiment, const emulator::Scenario& scenario, int tp, int pp,
               std::vector<PlanCandidate>& candidates) {
  const std::int64_t batch = static_cast<std::int64_t>(experiment.parallel.dp) * experiment.model.microbatches;
  const std::vector<int> dps = divisors(batch);
  int found = 0;
  for (auto dp = dps.rbegin(); dp != dps.rend() && found < kDpPerShape; ++dp) {
    if (static_cast<std::int64_t>(pp) * *dp * tp > total_gpus(experiment)) continue;
    const std::int64_t microbatches = batch / *dp;
    if (microbatches > kMaxMicrobatches) break;  // smaller dp only makes more
    PlanCandidate candidate{tp, pp, *dp, static_cast<int>(microbatches), false};
    const auto algorithm1 = atlas_stages(experiment, scenario, candidate);
    if (!algorithm1) continue;
    candidates.push_back(candidate);
    candidate.ordered = true;
    if (atlas_stages(experiment, scenario, candidate) != algorithm1) candidates.push_back(candidate);
    ++found;
  }
}

PlanOutcome measure(const Plan& plan, const RunRecord& record, const PlanCandidate& candidate) {
  const Experiment& experiment = plan.experiment;
  const std::vector<IterationSummary> iterations = summarize(record);
  const IterationSummary& summary = iterations.back();
  const RunSummary run = summarize_run(iterations);  // without the warm-up iteration when there are two
  PlanOutcome outcome;
  outcome.candidate = candidate;
  outcome.gpus = plan.gpus_used;
  for (int dc : plan.stage_dc) outcome.stage_dcs.push_back(plan.dc_names[static_cast<std::size_t>(dc)]);
  outcome.iteration_s = run.mean_iteration_s;
  outcome.utilization = run.mean_gpu_utilization;
  outcome.tokens_per_s = run.mean_tokens_per_s;
  for (const auto& [link, bytes] : summary.wan_bytes) {
    const auto arrow = link.find("->");
    const double gb = static_cast<double>(bytes) / experiment.scale / 1e9;
    outcome.wan_gb += gb;
    outcome.egress_usd += gb * experiment.egress.price(link.substr(0, arrow), link.substr(arrow + 2));
  }
  return outcome;
}

std::optional<PlanOutcome> simulate_candidate(const Experiment& experiment, const emulator::Scenario& scenario,
                                              const PlanCandidate& candidate) {
  const Experiment planned = with_candidate(experiment, candidate);
  try {
    const Plan plan = make_plan(planned, scenario);
    return measure(plan, simulate(plan, scenario, link_model_for(scenario, planned.scale), planned.iterations),
                   candidate);
  } catch (const ExperimentError&) {
    return std::nullopt;  // too big to simulate, or compute out of range
  }
}

std::string describe(const PlanCandidate& candidate) {
  return fmt::format("tp {} pp {} dp {} m {} {}", candidate.tp, candidate.pp, candidate.dp, candidate.microbatches,
                     candidate.ordered ? "ordered" : "Algorithm 1");
}

bool same_shape(const PlanCandidate& a, const PlanCandidate& b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.microbatches == b.microbatches;
}

// Where ordering by latency beats Algorithm 1's order on the same shape.
std::string ordering_gains(const std::vector<PlanOutcome>& ranked) {
  std::vector<std::pair<double, std::string>> gains;
  for (const PlanOutcome& ordered : ranked) {
    if (!ordered.candidate.ordered) continue;
    for (const PlanOutcome& plain : ranked) {
      if (plain.candidate.ordered || !same_shape(plain.candidate, ordered.candidate)) continue;
      gains.emplace_back(plain.iteration_s / ordered.iteration_s,
                         fmt::format("  tp {} pp {} dp {}: Algorithm 1's order {:.3f} s, ordered by latency {:.3f} s",
                                     plain.candidate.tp, plain.candidate.pp, plain.candidate.dp, plain.iteration_s,
                                     ordered.iteration_s));
    }
  }
  std::sort(gains.begin(), gains.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text = "\nOrdering the DCs by latency against Algorithm 1's order (same tp, pp, dp):\n";
  if (gains.empty()) return text + "  no shape where the order differs (3 or more DCs with stages are needed)\n";
  for (const auto& [ratio, line] : gains) text += fmt::format("{}: {:.2f}x\n", line, ratio);
  return text;
}

}  // namespace

Experiment with_candidate(const Experiment& experiment, const PlanCandidate& candidate) {
  Experiment out = experiment;
  const double compute_share = static_cast<double>(experiment.parallel.pp) * experiment.parallel.tp /
                               (static_cast<double>(candidate.pp) * candidate.tp);
  out.parallel = Parallel{candidate.pp, candidate.dp, candidate.tp};
  out.model.microbatches = candidate.microbatches;
  out.placement = Placement::atlas;
  out.placement_given = true;
  out.placement_dcs.clear();
  out.reorder_dcs = candidate.ordered;
  out.iterations = std::min(experiment.iterations, kMaxIterations);
  out.prefill.enabled = false;  // the training's plan; BubbleTea rides on whichever wins
  if (out.compute.forward_ms) out.compute.forward_ms = *out.compute.forward_ms * compute_share;
  if (out.compute.backward_ms) out.compute.backward_ms = *out.compute.backward_ms * compute_share;
  return out;
}

std::vector<PlanCandidate> plan_candidates(const Experiment& experiment, const emulator::Scenario& scenario) {
  if (experiment.gpus.empty()) {
    throw ExperimentError(
        fmt::format("{}: gpus: the planner searches the free GPUs per DC; give them in [gpus]", experiment.path));
  }
  if (is_diloco(experiment.schedule)) {
    throw ExperimentError(fmt::format(
        "{}: schedule: the planner searches Atlas's pipelines across DCs; {} keeps each replica in one DC: sweep its "
        "settings with wanlab whatif (scenarios/sweeps/atlas-diloco.toml)",
        experiment.where("schedule"), to_string(experiment.schedule)));
  }
  detail::check_egress_dcs(experiment, scenario);
  std::vector<PlanCandidate> candidates;
  const int most_tp = experiment.fabric ? experiment.fabric->gpus_per_server : kTpWithoutFabric;
  for (int tp = 1; tp <= most_tp; tp *= 2) {
    for (int pp : divisors(experiment.model.layers)) {
      if (pp <= kMaxPp) add_shape(experiment, scenario, tp, pp, candidates);
    }
  }
  std::erase_if(candidates, [&](const PlanCandidate& candidate) { return !candidate_fits(experiment, candidate); });
  return candidates;
}

PlannerReport search_plans(const Experiment& experiment, const emulator::Scenario& scenario,
                           const PlannerOptions& options) {
  const std::vector<PlanCandidate> candidates = plan_candidates(experiment, scenario);
  // The candidates, then the experiment's own shape under Algorithm 1.
  const PlanCandidate own{experiment.parallel.tp, experiment.parallel.pp, experiment.parallel.dp,
                          experiment.model.microbatches, false};
  auto candidate = [&](std::size_t i) -> const PlanCandidate& { return i < candidates.size() ? candidates[i] : own; };
  std::vector<std::optional<PlanOutcome>> outcomes(candidates.size() + 1);
  const auto simulate_one = [&](std::size_t i) {
    outcomes[i] = simulate_candidate(experiment, scenario, candidate(i));
  };
  const auto report_one = [&](std::size_t i) {
    if (!options.progress || i == candidates.size()) return;
    options.progress(
        fmt::format("{}/{} {}: {}", i + 1, candidates.size(), describe(candidates[i]),
                    outcomes[i] ? fmt::format("{:.3f} s", outcomes[i]->iteration_s) : "refused by make_plan"));
  };
  detail::for_each_index(outcomes.size(), options.jobs, simulate_one, report_one);
  PlannerReport report;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (outcomes[i]) {
      report.ranked.push_back(std::move(*outcomes[i]));
    } else {
      ++report.skipped;
    }
  }
  std::stable_sort(report.ranked.begin(), report.ranked.end(),
                   [](const PlanOutcome& a, const PlanOutcome& b) { return a.iteration_s < b.iteration_s; });
  report.algorithm1 = std::move(outcomes.back());
  return report;
}

std::string planner_table(const PlannerReport& report, std::size_t top) {
  std::string text = fmt::format("{} plans simulated{}, fastest first:\n\n", report.ranked.size(),
                                 report.skipped ? fmt::format(" ({} refused)", report.skipped) : "");
  text +=
      "| rank | tp | pp | dp | microbatches | DC order | GPUs | iteration (s) | GPU util | tokens/s | WAN GB/iter | "
      "egress $/iter |\n";
  text += "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < std::min(top, report.ranked.size()); ++i) {
    const PlanOutcome& plan = report.ranked[i];
    text += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.3f} | {:.1f}% | {:.0f} | {:.1f} | {:.2f} |\n", i + 1,
                        plan.candidate.tp, plan.candidate.pp, plan.candidate.dp, plan.candidate.microbatches,
                        plan.candidate.ordered ? "by latency" : "Algorithm 1", plan.gpus, plan.iteration_s,
                        100 * plan.utilization, plan.tokens_per_s, plan.wan_gb, plan.egress_usd);
  }
  if (report.ranked.empty()) return text;
  const PlanOutcome& best = report.ranked.front();
  text += fmt::format("\nBest: {}; stages {}\n", describe(best.candidate), detail::dc_chain(best.stage_dcs));
  text += ordering_gains(report.ranked);
  if (report.algorithm1) {
    const PlanOutcome& own = *report.algorithm1;
    text += fmt::format(
        "\nThe experiment's own shape under Atlas's Algorithm 1 ({}): {:.3f} s per iteration, {:.1f}% "
        "GPU utilization; the best plan is {:.2f}x faster.\n",
        describe(own.candidate), own.iteration_s, 100 * own.utilization, own.iteration_s / best.iteration_s);
  }
  return text;
}

}  // namespace wanlab::harness
