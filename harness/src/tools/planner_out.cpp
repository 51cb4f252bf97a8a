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

// One plot of a metric against the rank, a line per DC order.
LinePlot rank_plot(const PlannerReport& report, std::string title, std::string y_label,
                   double (*value)(const PlanOutcome&)) {
  LinePlot plot{std::move(title), "plan rank (fastest first)", std::move(y_label), {}, false, {}, {}};
  plot.series = {{"Algorithm 1's DC order", {}}, {"DCs ordered by latency", {}}};
  for (std::size_t i = 0; i < report.ranked.size(); ++i) {
    const PlanOutcome& plan = report.ranked[i];
    plot.series[plan.candidate.ordered ? 1 : 0].points.emplace_back(static_cast<double>(i + 1), value(plan));
  }
  std::erase_if(plot.series, [](const PlotSeries& series) { return series.points.empty(); });
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
  plots.push_back(rank_plot(report, "Simulated iteration time per plan", "iteration time (s)",
                            [](const PlanOutcome& p) { return p.iteration_s; }));
  if (report.algorithm1) {
    const double own = report.algorithm1->iteration_s;
    plots.back().series.push_back(
        {"the experiment's own shape (Algorithm 1)", {{1.0, own}, {static_cast<double>(report.ranked.size()), own}}});
  }
  plots.push_back(rank_plot(report, "GPU utilization per plan", "GPU utilization",
                            [](const PlanOutcome& p) { return p.utilization; }));
  plots.back().percent = true;
  plots.push_back(rank_plot(report, "WAN egress cost per plan", "egress $ per iteration",
                            [](const PlanOutcome& p) { return p.egress_usd; }));
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
