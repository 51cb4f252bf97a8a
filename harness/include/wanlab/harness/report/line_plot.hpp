// Line plots as SVG: what `wanlab whatif` draws per swept axis and `wanlab
// plot` draws from any CSV file (the benches' plots and the README's).
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wanlab::harness {

class PlotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PlotSeries {
  PlotSeries() = default;
  PlotSeries(std::string name_, std::vector<std::pair<double, double>> points_, bool joined_ = true,
             std::vector<std::string> labels_ = {})
      : name(std::move(name_)), points(std::move(points_)), joined(joined_), labels(std::move(labels_)) {}

  std::string name;                               // the legend's label
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
  bool joined = true;                             // false: points only (a scatter)
  // Empty, or one per point (as given): written beside the point and in its tooltip.
  std::vector<std::string> labels;
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;
  bool percent = false;         // y values are fractions (0-1): shown as percentages
  std::optional<double> y_min;  // else min(0, the least y)
  // Non-empty: x is a category, each point's x an index into these, and the
  // ticks are these labels ("1f1b", "atlas").
  std::vector<std::string> x_categories;
};

// One plot, 760 x 440, one line per series (colours, then dash patterns;
// points only where a series is not joined), a legend on the right, each
// point with a <title> tooltip. Throws PlotError
// when no series has a point, or a value is not finite.
std::string line_plot_svg(const LinePlot& plot);
// Several plots stacked in one SVG (one per metric of a sweep axis).
std::string line_plots_svg(std::span<const LinePlot> plots);

// The indices of `points` on their Pareto front when both x and y are to be
// as low as possible (or y as high, `y_higher_is_better`): no other point is
// at least as good on both and better on one. In x order.
std::vector<std::size_t> pareto_front(std::span<const std::pair<double, double>> points, bool y_higher_is_better);

// `wanlab plot`: one line per --y column, or with `series` one per value of
// that column (and per --y column when there are several). Rows whose y cell
// is "", "nan" or "-" are points not measured. Lines starting with '#' are
// comments.
struct CsvPlotOptions {
  std::string x;
  std::vector<std::string> ys;
  std::string series;  // empty: none
  std::string title;
  std::string x_label;  // empty: the x column's name
  std::string y_label;  // empty: the y columns' names
  bool percent = false;
  std::optional<double> y_min;
};
// Throws PlotError naming `path` and the row ("load.csv:4: ttft_s: "x" is not
// a number") or the missing column.
LinePlot plot_from_csv(std::string_view csv_text, const std::string& path, const CsvPlotOptions& options);

}  // namespace wanlab::harness
