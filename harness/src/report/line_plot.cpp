// Line plots as SVG (line_plot.hpp): axes with round ticks, one polyline per
// series, a legend on the right.
#include "wanlab/harness/report/line_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "report/svg.hpp"
#include "wanlab/base/parse.hpp"

namespace wanlab::harness {
namespace {

using detail::xml_escape;

constexpr double kWidth = 760, kHeight = 440;  // the least; wider for long legend names
constexpr double kLeft = 78, kRight = 200, kTop = 52, kBottom = 62;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;
constexpr double kLegendTextX = kLeft + kPlotWidth + 44;
constexpr double kCharWidth = 6.5;  // about, at font-size 11
constexpr int kTargetTicks = 6;
constexpr std::array kColours{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"};
constexpr std::array kDashes{"", "6 3", "2 3", "8 3 2 3"};

constexpr double kMaxTickIndex = 1e15;  // |value / step|: far inside long long, and exact in a double

// Round steps from at or below `low` to at or above `high`, so every point is
// inside; empty when the range cannot be drawn (its span or its ends past what
// a double holds: -1e308 to 1e308 once gave "-nan" coordinates).
std::vector<double> ticks(double low, double high) {
  const double step = detail::tick_step(high - low, kTargetTicks, {1.0, 2.0, 2.5, 5.0, 10.0});
  const double first = std::floor(low / step + 1e-9), last = std::ceil(high / step - 1e-9);
  if (!std::isfinite(step) || !(std::abs(first) <= kMaxTickIndex && std::abs(last) <= kMaxTickIndex) ||
      !std::isfinite(first * step) || !std::isfinite(last * step) || !(last > first))
    return {};
  std::vector<double> values;
  for (auto i = static_cast<long long>(first); i <= static_cast<long long>(last); ++i)
    values.push_back(static_cast<double>(i) * step);  // no 0.30000000000000004
  return values;
}

// "plot TITLE" for errors, or "plot" without a title.
std::string plot_name(const LinePlot& plot) {
  return plot.title.empty() ? "plot" : fmt::format("plot {}", base::escaped(plot.title));
}

// A range with one value gets a width: 1, or a billionth of the value when that is more
// (past 2^53, +1 is lost).
double past(double low, double high) { return high > low ? high : low + std::max(1.0, std::abs(low) * 1e-9); }

// Wide enough for the longest legend name.
double width_of(std::span<const LinePlot> plots) {
  std::size_t longest = 0;
  for (const LinePlot& plot : plots)
    for (const PlotSeries& series : plot.series) longest = std::max(longest, series.name.size());
  return std::max(kWidth, std::ceil(kLegendTextX + kCharWidth * static_cast<double>(longest) + 12));
}

std::string number_label(double value, bool percent) {
  if (std::abs(value) < 1e-12) value = 0;  // no "-0"
  return percent ? fmt::format("{:g}%", value * 100) : fmt::format("{:g}", value);
}

// The data's range mapped onto the plot area.
class Frame {
 public:
  explicit Frame(const LinePlot& plot) : plot_(plot) {
    double x_low = INFINITY, x_high = -INFINITY, y_low = INFINITY, y_high = -INFINITY;
    for (const PlotSeries& series : plot.series) {
      for (const auto& [x, y] : series.points) {
        if (!std::isfinite(x) || !std::isfinite(y))
          throw PlotError(
              fmt::format("{}: series {}: a value that is not finite", plot_name(plot), base::quoted(series.name)));
        x_low = std::min(x_low, x), x_high = std::max(x_high, x);
        y_low = std::min(y_low, y), y_high = std::max(y_high, y);
      }
    }
    if (x_low > x_high) throw PlotError(fmt::format("{}: no points to plot", plot_name(plot)));
    if (!plot.x_categories.empty()) {
      // One tick per category; a lone one still needs a second end to the axis.
      x_ticks_ = std::vector<double>(std::max<std::size_t>(plot.x_categories.size(), 2));
      std::iota(x_ticks_.begin(), x_ticks_.end(), 0.0);
    } else {
      x_ticks_ = axis_ticks("x", x_low, x_high);
    }
    y_ticks_ = axis_ticks("y", plot.y_min.value_or(std::min(0.0, y_low)), y_high);
  }

  double px(double x) const {
    return kLeft + (x - x_ticks_.front()) / (x_ticks_.back() - x_ticks_.front()) * kPlotWidth;
  }
  double py(double y) const {
    return kTop + kPlotHeight - (y - y_ticks_.front()) / (y_ticks_.back() - y_ticks_.front()) * kPlotHeight;
  }
  std::string x_label(double x) const {
    if (plot_.x_categories.empty()) return number_label(x, false);
    const auto index = static_cast<std::size_t>(std::lround(x));
    return index < plot_.x_categories.size() ? plot_.x_categories[index] : "";
  }
  const std::vector<double>& x_ticks() const { return x_ticks_; }
  const std::vector<double>& y_ticks() const { return y_ticks_; }

 private:
  std::vector<double> axis_ticks(std::string_view axis, double low, double high) const {
    std::vector<double> values = ticks(low, past(low, high));
    if (values.size() < 2)
      throw PlotError(
          fmt::format("{}: {} values from {:g} to {:g}: a range it cannot draw", plot_name(plot_), axis, low, high));
    return values;
  }

  const LinePlot& plot_;
  std::vector<double> x_ticks_, y_ticks_;
};

void draw_axes(const LinePlot& plot, const Frame& frame, std::string& out) {
  out += fmt::format(R"(<text x="{}" y="28" font-size="15" font-weight="bold">{}</text>)"
                     "\n",
                     kLeft, xml_escape(plot.title));
  for (double value : frame.y_ticks()) {
    const double y = frame.py(value);
    out += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#e0e0e0"/>)"
                       "\n",
                       kLeft, kLeft + kPlotWidth, y, y);
    out += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)"
                       "\n",
                       kLeft - 8, y + 4, xml_escape(number_label(value, plot.percent)));
  }
  for (double value : frame.x_ticks()) {
    const double x = frame.px(value);
    out += fmt::format(R"(<line x1="{:.1f}" x2="{:.1f}" y1="{}" y2="{}" stroke="#333"/>)"
                       "\n",
                       x, x, kTop + kPlotHeight, kTop + kPlotHeight + 5);
    out += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{}</text>)"
                       "\n",
                       x, kTop + kPlotHeight + 19, xml_escape(frame.x_label(value)));
  }
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)"
                     "\n",
                     kLeft, kTop, kPlotWidth, kPlotHeight);
  out += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="12" text-anchor="middle">{}</text>)"
                     "\n",
                     kLeft + kPlotWidth / 2, kHeight - 18, xml_escape(plot.x_label));
  out += fmt::format(
      R"svg(<text transform="translate(18,{:.1f}) rotate(-90)" font-size="12" text-anchor="middle">{}</text>)svg"
      "\n",
      kTop + kPlotHeight / 2, xml_escape(plot.y_label));
}

void draw_series(const LinePlot& plot, const Frame& frame, std::size_t index, std::string& out) {
  const PlotSeries& series = plot.series[index];
  // In x order, each point with its label.
  std::vector<std::size_t> order(series.points.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return series.points[a] < series.points[b]; });
  const auto label_of = [&](std::size_t i) { return i < series.labels.size() ? series.labels[i] : std::string(); };
  const char* colour = kColours[index % kColours.size()];
  const char* dash = kDashes[(index / kColours.size()) % kDashes.size()];
  const std::string dash_attribute = *dash ? fmt::format(R"( stroke-dasharray="{}")", dash) : "";
  std::string path;
  for (std::size_t k = 0; k < order.size(); ++k)
    path += fmt::format("{}{}{:.1f},{:.1f}", k ? " " : "", k ? 'L' : 'M', frame.px(series.points[order[k]].first),
                        frame.py(series.points[order[k]].second));
  if (series.joined && !order.empty())
    out += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2"{}/>)"
                       "\n",
                       path, colour, dash_attribute);
  for (const std::size_t i : order) {
    const auto [x, y] = series.points[i];
    const std::string label = label_of(i);
    out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}"><title>{}{}: {}, {}</title></circle>)"
                       "\n",
                       frame.px(x), frame.py(y), series.joined ? 3 : 4, colour, xml_escape(series.name),
                       label.empty() ? "" : " " + xml_escape(label), xml_escape(frame.x_label(x)),
                       xml_escape(number_label(y, plot.percent)));
    if (!label.empty())
      out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="9.5" fill="#333">{}</text>)"
                         "\n",
                         frame.px(x) + 6, frame.py(y) - 6, xml_escape(label));
  }
  const double legend_y = kTop + 10 + 20 * static_cast<double>(index);
  if (series.joined)
    out += fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{}" stroke-width="2"{}/>)"
                       "\n",
                       kLeft + kPlotWidth + 14, kLeft + kPlotWidth + 38, legend_y, legend_y, colour, dash_attribute);
  else
    out += fmt::format(R"(<circle cx="{}" cy="{}" r="4" fill="{}"/>)"
                       "\n",
                       kLeft + kPlotWidth + 26, legend_y, colour);
  out += fmt::format(R"(<text x="{}" y="{}" font-size="11">{}</text>)"
                     "\n",
                     kLegendTextX, legend_y + 4, xml_escape(series.name));
}

// One plot's elements, at the origin.
std::string plot_body(const LinePlot& plot, double width) {
  const Frame frame(plot);
  std::string out = fmt::format(R"(<rect width="{}" height="{}" fill="white"/>)"
                                "\n",
                                width, kHeight);
  draw_axes(plot, frame, out);
  for (std::size_t i = 0; i < plot.series.size(); ++i) draw_series(plot, frame, i, out);
  return out;
}

std::string svg_open(double width, double height) {
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" )"
                     R"(font-family="DejaVu Sans, Helvetica, Arial, sans-serif">)"
                     "\n",
                     width, height);
}

}  // namespace

std::vector<std::size_t> pareto_front(std::span<const std::pair<double, double>> points, bool y_higher_is_better) {
  std::vector<std::size_t> order(points.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Better y first among equal x, so that only the best of them can be on the front.
  const auto better_y = [&](double a, double b) { return y_higher_is_better ? a > b : a < b; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (points[a].first != points[b].first) return points[a].first < points[b].first;
    return better_y(points[a].second, points[b].second);
  });
  std::vector<std::size_t> front;
  for (const std::size_t i : order)
    if (front.empty() || better_y(points[i].second, points[front.back()].second)) front.push_back(i);
  return front;
}

std::string line_plot_svg(const LinePlot& plot) { return line_plots_svg(std::span<const LinePlot>(&plot, 1)); }

std::string line_plots_svg(std::span<const LinePlot> plots) {
  const double width = width_of(plots);
  std::string out = svg_open(width, kHeight * static_cast<double>(plots.size()));
  if (plots.size() == 1) return out + plot_body(plots.front(), width) + "</svg>\n";
  for (std::size_t i = 0; i < plots.size(); ++i)
    out += fmt::format(R"svg(<g transform="translate(0,{})">)svg"
                       "\n{}</g>\n",
                       kHeight * static_cast<double>(i), plot_body(plots[i], width));
  return out + "</svg>\n";
}

}  // namespace wanlab::harness
