// `wanlab whatif`'s points (whatif.hpp): each simulated, and the results as
// points.csv, a table and a plot per axis.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <map>

#include "report/csv.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"
#include "wanlab/harness/sim/simulate.hpp"
#include "wanlab/harness/tools/whatif.hpp"

namespace wanlab::harness {
namespace {

bool any_prefill(const std::vector<PointResult>& results) {
  return std::any_of(results.begin(), results.end(),
                     [](const PointResult& r) { return r.utilization_with_prefill.has_value(); });
}

std::string optional_cell(const std::optional<double>& value, std::string_view format) {
  return value ? fmt::format(fmt::runtime(format), *value) : "";
}

bool any_outer_rounds(const std::vector<PointResult>& results) {
  return std::any_of(results.begin(), results.end(), [](const PointResult& r) { return r.steps_per_iteration > 1; });
}

// Where a metric is shown: every sweep, or only one with some point that has it.
enum class Shown { always, with_prefill, with_outer_rounds };

// One metric of a point, as points.csv and the plots name it.
struct Metric {
  std::string_view column;
  std::string_view label;  // the plot's y axis
  bool percent;
  Shown shown;
  std::string_view format;
  std::optional<double> (*value)(const PointResult&);
};

constexpr Metric kMetrics[] = {
    {"iteration_s", "mean iteration time (s)", false, Shown::always, "{:.6f}",
     [](const PointResult& r) -> std::optional<double> { return r.iteration_s; }},
    {"gpu_utilization", "GPU utilization (training)", true, Shown::always, "{:.4f}",
     [](const PointResult& r) -> std::optional<double> { return r.gpu_utilization; }},
    {"tokens_per_s", "training tokens/s", false, Shown::always, "{:.1f}",
     [](const PointResult& r) -> std::optional<double> { return r.tokens_per_s; }},
    {"step_s", "time per training step (s)", false, Shown::with_outer_rounds, "{:.6f}",
     [](const PointResult& r) -> std::optional<double> { return r.step_s; }},
    {"wan_bytes_per_step", "WAN bytes per training step", false, Shown::always, "{:.0f}",
     [](const PointResult& r) -> std::optional<double> { return r.wan_bytes_per_step; }},
    {"gpu_utilization_with_prefill", "GPU utilization with prefill", true, Shown::with_prefill, "{:.4f}",
     [](const PointResult& r) { return r.utilization_with_prefill; }},
    {"prefill_tokens_per_s", "prefill tokens/s", false, Shown::with_prefill, "{:.1f}",
     [](const PointResult& r) { return r.prefill_tokens_per_s; }},
    {"ttft_p99_s", "TTFT p99 (s)", false, Shown::with_prefill, "{:.3f}",
     [](const PointResult& r) { return r.ttft_p99_s; }},
};

std::vector<const Metric*> metrics_of(const std::vector<PointResult>& results) {
  std::vector<const Metric*> metrics;
  const bool prefill = any_prefill(results);
  const bool rounds = any_outer_rounds(results);
  for (const Metric& metric : kMetrics)
    if (metric.shown == Shown::always || (metric.shown == Shown::with_prefill && prefill) ||
        (metric.shown == Shown::with_outer_rounds && rounds))
      metrics.push_back(&metric);
  return metrics;
}

// Each row's cells: point, the axes' values, the metrics.
std::vector<std::vector<std::string>> rows_of(const Sweep& sweep, const std::vector<PointResult>& results) {
  const auto metrics = metrics_of(results);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"point"};
  if (!sweep.labels.empty()) header.emplace_back("label");
  for (const SweepAxis& axis : sweep.axes) header.push_back(axis.key);
  for (const Metric* metric : metrics) header.emplace_back(metric->column);
  rows.push_back(std::move(header));
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::vector<std::string> row{std::to_string(i + 1)};
    if (!sweep.labels.empty()) row.push_back(sweep.labels[i]);
    const auto at = sweep.coordinates(i);
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) row.push_back(sweep.axes[a].labels[at[a]]);
    for (const Metric* metric : metrics) row.push_back(optional_cell(metric->value(results[i]), metric->format));
    rows.push_back(std::move(row));
  }
  return rows;
}

// An axis's values as x: numbers, or one number and one unit each ("40ms"), else categories.
struct AxisX {
  std::vector<double> values;  // per label
  std::string unit;
  bool categorical = false;
};

AxisX axis_x(const SweepAxis& axis) {
  AxisX x;
  for (const std::string& label : axis.labels) {
    double value = 0;
    const auto [end, error] = std::from_chars(label.data(), label.data() + label.size(), value);
    const std::string unit(end, label.data() + label.size());
    if (error != std::errc() || end == label.data() || (x.values.size() > 0 && unit != x.unit) ||
        unit.find_first_of(" ,[]{}\"") != std::string::npos) {
      x.categorical = true;
      break;
    }
    x.unit = unit;
    x.values.push_back(value);
  }
  if (x.categorical) {
    x.values.clear();
    x.unit.clear();
    for (std::size_t i = 0; i < axis.labels.size(); ++i) x.values.push_back(static_cast<double>(i));
  }
  return x;
}

// A point's series on `axis`: the other axes' values (grid), or "" (one line: zip).
std::string series_of(const Sweep& sweep, std::size_t axis, std::size_t index) {
  if (sweep.mode == SweepMode::zip) return "";
  const auto at = sweep.coordinates(index);
  std::string name;
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (a == axis) continue;
    name += fmt::format("{}{} = {}", name.empty() ? "" : ", ", sweep.axes[a].key, sweep.axes[a].labels[at[a]]);
  }
  return name;
}

// What the points are plotted against: per point its x and its series.
struct PlotAxis {
  std::string name;   // in titles: "parallel.dp"
  std::string label;  // under the x axis: "testbed.link[0].delay (ms)"
  std::vector<std::string> categories;
  std::vector<double> x;
  std::vector<std::string> series;  // "" for one line, named after the metric
};

// One plot per metric against the axis.
std::vector<LinePlot> metric_plots(const PlotAxis& axis, const std::vector<PointResult>& results) {
  std::vector<LinePlot> plots;
  for (const Metric* metric : metrics_of(results)) {
    LinePlot plot;
    plot.title = fmt::format("{} against {}", metric->label, axis.name);
    plot.x_label = axis.label;
    plot.y_label = std::string(metric->label);
    plot.percent = metric->percent;
    plot.x_categories = axis.categories;
    std::map<std::string, std::size_t> index_of;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const std::optional<double> y = metric->value(results[i]);
      if (!y) continue;
      const std::string name = axis.series[i].empty() ? std::string(metric->label) : axis.series[i];
      auto [slot, added] = index_of.emplace(name, plot.series.size());
      if (added) plot.series.push_back({name, {}});
      plot.series[slot->second].points.emplace_back(axis.x[i], *y);
    }
    if (!plot.series.empty()) plots.push_back(std::move(plot));
  }
  return plots;
}

}  // namespace

PointResult run_point(const Sweep& sweep, std::size_t index, const SweepPoint& point, const Invocation* invocation) {
  const auto start = std::chrono::steady_clock::now();
  RunRecord record;
  try {
    record = simulate_experiment(point.experiment, point.scenario);
  } catch (const std::runtime_error& error) {  // the planner's ExperimentError, the simulator's limits
    throw SweepError(
        fmt::format("point {} of {} ({}): {}", index + 1, sweep.size(), sweep.describe(index), error.what()));
  }
  const std::vector<IterationSummary> iterations = summarize(record);
  const RunSummary run = summarize_run(iterations);
  const StepFigures steps = step_figures(point.experiment, iterations, run);
  PointResult result;
  result.iteration_s = run.mean_iteration_s;
  result.gpu_utilization = run.mean_gpu_utilization;
  result.tokens_per_s = run.mean_tokens_per_s;
  result.steps_per_iteration = steps.steps_per_iteration;
  result.step_s = steps.mean_step_s;
  result.wan_bytes_per_step = steps.wan_bytes_per_step;
  if (record.prefill) {
    const PrefillSummary prefill = summarize_prefill(record);
    result.utilization_with_prefill = prefill.mean_gpu_utilization;
    result.prefill_tokens_per_s = prefill.prefill_tokens_per_s;
    result.ttft_p99_s = prefill.ttft_p99_s;
  }
  if (invocation) {
    Invocation here = *invocation;
    here.sweep_point = fmt::format("{} of {}: {}", index + 1, sweep.size(), sweep.describe(index));
    result.card = workload_card(record, point.scenario, here);
  }
  result.simulate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<PointResult> run_sweep(const Sweep& sweep, const std::function<void(const SweepProgress&)>& progress,
                                   const Invocation* invocation) {
  // Every point is read first, so a bad value stops the sweep before any simulation.
  for (std::size_t i = 0; i < sweep.size(); ++i) make_point(sweep, i);
  const auto start = std::chrono::steady_clock::now();
  std::vector<PointResult> results;
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    results.push_back(run_point(sweep, i, make_point(sweep, i), invocation));
    if (!progress) continue;
    SweepProgress p{i + 1, sweep.size(), std::chrono::steady_clock::now() - start, {}};
    p.remaining = p.elapsed / static_cast<double>(p.done) * static_cast<double>(p.total - p.done);
    progress(p);
  }
  return results;
}

std::string points_csv(const Sweep& sweep, const std::vector<PointResult>& results) {
  std::string csv;
  for (const auto& row : rows_of(sweep, results)) csv += detail::csv_row(row);
  return csv;
}

std::string points_table(const Sweep& sweep, const std::vector<PointResult>& results) {
  const auto rows = rows_of(sweep, results);
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string table;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += fmt::format("{}{:>{}}", c ? "  " : "", row[c], width[c]);
    table += line + "\n";
  }
  return table;
}

std::vector<LinePlot> axis_plots(const Sweep& sweep, const std::vector<PointResult>& results, std::size_t axis) {
  const SweepAxis& swept = sweep.axes.at(axis);
  const AxisX x = axis_x(swept);
  PlotAxis plot_axis{swept.key,
                     x.unit.empty() ? swept.key : fmt::format("{} ({})", swept.key, x.unit),
                     x.categorical ? swept.labels : std::vector<std::string>{},
                     {},
                     {}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    plot_axis.x.push_back(x.values[sweep.coordinates(i)[axis]]);
    plot_axis.series.push_back(series_of(sweep, axis, i));
  }
  return metric_plots(plot_axis, results);
}

std::vector<LinePlot> label_plots(const Sweep& sweep, const std::vector<PointResult>& results) {
  PlotAxis plot_axis{"the points", "", sweep.labels, {}, std::vector<std::string>(results.size())};
  for (std::size_t i = 0; i < results.size(); ++i) plot_axis.x.push_back(static_cast<double>(i));
  return metric_plots(plot_axis, results);
}

std::string axis_plot_name(const SweepAxis& axis) {
  std::string name = axis.key;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return name + ".svg";
}

}  // namespace wanlab::harness
