// `wanlab plan --out` (planner.hpp): the ranking as plans.csv and plans.svg.
#include <fmt/format.h>

#include "report/csv.hpp"
#include "experiment/text.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/harness/tools/planner.hpp"

namespace wanlab::harness {
namespace {

std::string order_name(const PlanCandidate& candidate) { return candidate.ordered ? "by latency" : "Algorithm 1"; }

bool own_shape(const PlannerReport& report, const PlanOutcome& plan) {
  return report.algorithm1 && report.algorithm1->candidate == plan.candidate;
}

std::vector<std::string> csv_cells(const PlannerReport& report, std::size_t rank) {
  const PlanOutcome& plan = report.ranked[rank];
  const PlanCandidate& c = plan.candidate;
  return {std::to_string(rank + 1),
          std::to_string(c.tp),
          std::to_string(c.pp),
          std::to_string(c.dp),
          std::to_string(c.microbatches),
          order_name(c),
          detail::dc_chain(plan.stage_dcs),
          std::to_string(plan.gpus),
          fmt::format("{:.6f}", plan.iteration_s),
          fmt::format("{:.4f}", plan.utilization),
          fmt::format("{:.1f}", plan.tokens_per_s),
          fmt::format("{:.3f}", plan.wan_gb),
          fmt::format("{:.4f}", plan.egress_usd),
          own_shape(report, plan) ? "yes" : "no"};
}

// "tp 8 pp 16 dp 78 mb 32", and "by latency" where the DC order is.
std::string shape_label(const PlanCandidate& c) {
  return fmt::format("tp {} pp {} dp {} mb {}{}", c.tp, c.pp, c.dp, c.microbatches, c.ordered ? ", by latency" : "");
}

// A metric against egress $ per iteration, one point per plan (a series per
// DC order), the Pareto front (cheaper and better at once: nothing beats a
// plan on it in both) joined and labelled with its shapes, and the
// experiment's own shape under Algorithm 1 as a point of its own.
LinePlot cost_plot(const PlannerReport& report, std::string title, std::string y_label,
                   double (*value)(const PlanOutcome&), bool higher_is_better) {
  LinePlot plot{std::move(title), "WAN egress $ per iteration", std::move(y_label), {}, false, {}, {}};
  plot.series = {{"plans, Algorithm 1's DC order", {}, false}, {"plans, DCs ordered by latency", {}, false}};
  std::vector<std::pair<double, double>> points;
  for (const PlanOutcome& plan : report.ranked) {
    points.emplace_back(plan.egress_usd, value(plan));
    plot.series[plan.candidate.ordered ? 1 : 0].points.push_back(points.back());
  }
  std::erase_if(plot.series, [](const PlotSeries& series) { return series.points.empty(); });
  PlotSeries front{"Pareto front (labelled: tp, pp, dp, microbatches)", {}};
  for (const std::size_t i : pareto_front(points, higher_is_better)) {
    front.points.push_back(points[i]);
    front.labels.push_back(shape_label(report.ranked[i].candidate));
  }
  plot.series.push_back(std::move(front));
  if (report.algorithm1)
    plot.series.push_back({"the experiment's own shape (Algorithm 1)",
                           {{report.algorithm1->egress_usd, value(*report.algorithm1)}},
                           false,
                           {shape_label(report.algorithm1->candidate)}});
  return plot;
}

}  // namespace

std::string planner_csv(const PlannerReport& report) {
  std::string csv =
      detail::csv_row({"rank", "tp", "pp", "dp", "microbatches", "dc_order", "stages", "gpus", "iteration_s",
                       "gpu_utilization", "tokens_per_s", "wan_gb", "egress_usd", "own_shape"});
  for (std::size_t i = 0; i < report.ranked.size(); ++i) csv += detail::csv_row(csv_cells(report, i));
  return csv;
}

std::vector<LinePlot> planner_plots(const PlannerReport& report) {
  if (report.ranked.empty()) return {};
  std::vector<LinePlot> plots;
  plots.push_back(cost_plot(
      report, "Iteration time against WAN egress cost, one point per plan", "simulated iteration time (s)",
      [](const PlanOutcome& p) { return p.iteration_s; },
      /*higher_is_better=*/false));
  plots.push_back(cost_plot(
      report, "GPU utilization against WAN egress cost, one point per plan", "GPU utilization",
      [](const PlanOutcome& p) { return p.utilization; }, /*higher_is_better=*/true));
  plots.back().percent = true;
  return plots;
}

std::vector<std::string> write_planner_files(const PlannerReport& report, const base::OutputDir& dir) {
  dir.write("plans.csv", planner_csv(report));
  std::vector<std::string> written{dir.path_of("plans.csv")};
  const std::vector<LinePlot> plots = planner_plots(report);
  if (plots.empty()) return written;
  dir.write("plans.svg", line_plots_svg(plots));
  written.push_back(dir.path_of("plans.svg"));
  return written;
}

}  // namespace wanlab::harness
