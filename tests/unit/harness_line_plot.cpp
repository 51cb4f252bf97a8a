// Line plots as SVG (line_plot.hpp): well-formed, every series drawn and
// named, categories as ticks, and `wanlab plot`'s CSV reading with its errors.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "wanlab/harness/report/line_plot.hpp"

namespace hs = wanlab::harness;

namespace {

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Every element closed in order, attribute values quoted, no stray '<' or '&'.
bool well_formed(const std::string& svg) {
  std::vector<std::string> open;
  for (std::size_t at = 0; (at = svg.find('<', at)) != std::string::npos;) {
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) return false;
    const std::string tag = svg.substr(at + 1, end - at - 1);
    if (tag.find('<') != std::string::npos || count(tag, "\"") % 2 != 0) return false;
    const std::string name = tag.substr(tag.front() == '/', tag.find_first_of(" />", 1) - (tag.front() == '/'));
    if (tag.front() == '/') {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(name);
    }
    at = end;
  }
  for (std::size_t at = 0; (at = svg.find('&', at)) != std::string::npos; ++at)
    if (svg.compare(at, 4, "&lt;") && svg.compare(at, 4, "&gt;") && svg.compare(at, 5, "&amp;") &&
        svg.compare(at, 6, "&quot;"))
      return false;
  return open.empty();
}

hs::LinePlot two_lines() {
  hs::LinePlot plot;
  plot.title = "iteration <time> & delay";
  plot.x_label = "delay (ms)";
  plot.y_label = "s";
  plot.series = {{"1f1b", {{40, 2.5}, {10, 1.0}, {80, 4.0}}}, {"atlas \"8 streams\"", {{10, 0.8}, {80, 2.0}}}};
  return plot;
}

std::string error_of(const std::string& csv, const hs::CsvPlotOptions& options) {
  try {
    hs::plot_from_csv(csv, "runs.csv", options);
  } catch (const hs::PlotError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_plot_is_well_formed_svg_with_every_series_named_and_drawn) {
  const std::string svg = hs::line_plot_svg(two_lines());
  BOOST_TEST(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  BOOST_TEST(svg.ends_with("</svg>\n"));
  BOOST_TEST(well_formed(svg), svg);
  BOOST_TEST(count(svg, "<path ") == 2u);
  BOOST_TEST(count(svg, "<circle ") == 5u);
  BOOST_TEST(count(svg, ">1f1b</text>") == 1u);  // the legend
  BOOST_TEST(count(svg, ">atlas &quot;8 streams&quot;</text>") == 1u);
  BOOST_TEST(count(svg, "iteration &lt;time&gt; &amp; delay") == 1u);  // the title, escaped
  BOOST_TEST(count(svg, "<title>1f1b: 80, 4</title>") == 1u);
  // Points in x order whatever order they came in: the path starts at x = 10.
  const auto first_path = svg.find("<path d=\"M");
  const auto second_point = svg.find(" L", first_path);
  const double x_first = std::stod(svg.substr(first_path + 10));
  const double x_second = std::stod(svg.substr(second_point + 2));
  BOOST_TEST(x_first < x_second);
  // Ticks: 0 to 80 on x, 0 to 4 on y, round steps.
  BOOST_TEST(count(svg, "text-anchor=\"middle\">80</text>") == 1u);
  BOOST_TEST(count(svg, "text-anchor=\"end\">4</text>") == 1u);
}

// Every point inside the frame (x 78-560, y 52-378), whatever the data's range.
BOOST_AUTO_TEST_CASE(the_axes_reach_past_every_point) {
  for (const double top : {1.855, 0.75, 1.5, 123.4, 0.0031}) {
    hs::LinePlot plot;
    plot.series = {{"s", {{0, 0.1 * top}, {7.3, top}, {13, 0.5 * top}}}};
    const std::string svg = hs::line_plot_svg(plot);
    std::size_t circles = 0;
    for (auto at = svg.find("<circle cx=\""); at != std::string::npos;
         at = svg.find("<circle cx=\"", at + 1), ++circles) {
      const double cx = std::stod(svg.substr(at + 12));
      const double cy = std::stod(svg.substr(svg.find("cy=\"", at) + 4));
      BOOST_TEST((cx >= 78 && cx <= 560), top << ": cx " << cx);
      BOOST_TEST((cy >= 52 && cy <= 378), top << ": cy " << cy);
    }
    BOOST_TEST(circles == 3u);
  }
}

BOOST_AUTO_TEST_CASE(percentages_categories_and_stacked_plots) {
  hs::LinePlot plot;
  plot.title = "utilization";
  plot.percent = true;
  plot.x_categories = {"gpipe", "1f1b", "atlas"};
  plot.series = {{"u", {{0, 0.25}, {1, 0.5}, {2, 0.75}}}};
  const std::string svg = hs::line_plot_svg(plot);
  BOOST_TEST(well_formed(svg));
  for (const char* tick : {">gpipe</text>", ">1f1b</text>", ">atlas</text>", ">40%</text>"})
    BOOST_TEST(count(svg, tick) == 1u, tick);
  BOOST_TEST(count(svg, "<title>u: atlas, 75%</title>") == 1u);

  const std::vector<hs::LinePlot> plots{plot, two_lines()};
  const std::string stacked = hs::line_plots_svg(plots);
  BOOST_TEST(well_formed(stacked));
  BOOST_TEST(count(stacked, "<svg ") == 1u);
  BOOST_TEST(count(stacked, "height=\"880\"") == 1u);
  BOOST_TEST(count(stacked, "<g transform=\"translate(0,440)\">") == 1u);

  hs::LinePlot empty;
  empty.series = {{"nothing", {}}};
  BOOST_CHECK_THROW(hs::line_plot_svg(empty), hs::PlotError);
}

BOOST_AUTO_TEST_CASE(csv_columns_become_series) {
  const std::string csv =
      "# a comment\n"
      "delay_ms,run,training,\"with, prefill\"\n"
      "10,a,0.5,0.8\n"
      "40,a,0.4,-\n"
      "10,b,0.6,0.9\n"
      "\n"
      "40,b,0.5,0.85\n";
  hs::CsvPlotOptions options;
  options.x = "delay_ms";
  options.ys = {"training", "with, prefill"};
  hs::LinePlot plot = hs::plot_from_csv(csv, "runs.csv", options);
  BOOST_TEST_REQUIRE(plot.series.size() == 2u);
  BOOST_TEST(plot.series[0].name == "training");
  BOOST_TEST(plot.series[0].points.size() == 4u);
  BOOST_TEST(plot.series[1].points.size() == 3u);  // "-": not measured
  BOOST_TEST(plot.x_label == "delay_ms");
  BOOST_TEST(plot.y_label == "training, with, prefill");

  options.series = "run";
  plot = hs::plot_from_csv(csv, "runs.csv", options);
  BOOST_TEST(plot.series.size() == 4u);
  BOOST_TEST(plot.series[0].name == "a training");
  options.ys = {"training"};
  plot = hs::plot_from_csv(csv, "runs.csv", options);
  BOOST_TEST_REQUIRE(plot.series.size() == 2u);
  BOOST_TEST(plot.series[1].name == "b");
  BOOST_TEST((plot.series[1].points == std::vector<std::pair<double, double>>{{10, 0.6}, {40, 0.5}}));
}

BOOST_AUTO_TEST_CASE(bad_csv_is_one_line_naming_the_file_and_line) {
  hs::CsvPlotOptions options;
  options.x = "x";
  options.ys = {"y"};
  BOOST_TEST(error_of("x,y\n1,2\n3,fast\n", options) == "runs.csv:3: y: \"fast\" is not a number");
  BOOST_TEST(error_of("x,y\n1,2\n3,4,5\n", options) == "runs.csv:3: 3 fields; the header has 2");
  BOOST_TEST(error_of("x,y\n1,\"2\n", options) == "runs.csv:2: a quoted field is not closed");
  BOOST_TEST(error_of("x,y\n1,inf\n", options) == "runs.csv:2: y: \"inf\" is not finite");
  BOOST_TEST(error_of("x,y\n1,-\n", options) == "runs.csv: no points to plot");
  options.ys = {"z"};
  BOOST_TEST(error_of("x,y\n1,2\n", options) == "runs.csv: no column \"z\" (columns: x, y)");
}

// `plot` printed the header raw and whole: escape sequences reached the
// terminal, a 4 MiB line the log, and a link to /etc/shadow its first line.
BOOST_AUTO_TEST_CASE(the_header_in_an_error_is_escaped_cut_and_only_a_csv_header) {
  hs::CsvPlotOptions options;
  options.x = "x";
  options.ys = {"y"};
  BOOST_TEST(error_of("\x1b[2Jx,\"a\nb\"\n1,2\n", options) == R"(runs.csv: no column "x" (columns: \x1b[2Jx, a\x0ab))");
  const std::string wide = error_of(std::string(4u << 20, 'w') + ",v\n", options);
  BOOST_TEST(wide == "runs.csv: no column \"x\" (columns: " + std::string(32, 'w') + "..., v)");
  std::string many;
  for (int i = 0; i < 20; ++i) many += "c" + std::to_string(i) + ",";
  BOOST_TEST(error_of(many + "last\n", options) ==
             "runs.csv: no column \"x\" (columns: c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, ... (21 in all))");
  BOOST_TEST(error_of("root:$y$j9T$SECRET:19000:0:99999:7:::\n", options) ==
             "runs.csv: no column \"x\" (the first line has no comma: not a CSV table)");
}

// Ranges past what a double holds once gave "-nan" coordinates; a lone value
// past 2^53 (where +1 is lost) one tick and a division by zero.
BOOST_AUTO_TEST_CASE(ranges_that_overflow_are_refused_and_huge_lone_values_drawn) {
  hs::LinePlot wide;
  wide.title = "wide";
  wide.series = {{"s", {{-1e308, 1}, {1e308, 2}}}};
  std::string message;
  try {
    hs::line_plot_svg(wide);
  } catch (const hs::PlotError& error) {
    message = error.what();
  }
  BOOST_TEST(message == "plot wide: x values from -1e+308 to 1e+308: a range it cannot draw");
  wide.title.clear();
  wide.series = {{"s", {{0, -1.7e308}, {1, 1.7e308}}}};
  try {
    hs::line_plot_svg(wide);
  } catch (const hs::PlotError& error) {
    message = error.what();
  }
  BOOST_TEST(message == "plot: y values from -1.7e+308 to 1.7e+308: a range it cannot draw");
  for (const double value : {1e300, -1e300, 1e17, 4.5e15}) {
    hs::LinePlot lone;
    lone.series = {{"s", {{value, value}, {value, value}}}};
    const std::string svg = hs::line_plot_svg(lone);
    BOOST_TEST(svg.find("nan") == std::string::npos, value);
    BOOST_TEST(svg.find("inf") == std::string::npos, value);
    BOOST_TEST(well_formed(svg), value);
  }
}

// A scatter (points only) with labels, and the Pareto front it marks.
BOOST_AUTO_TEST_CASE(a_scatter_draws_points_only_with_their_labels) {
  hs::LinePlot plot;
  plot.series = {{"plans", {{1, 5}, {2, 3}, {3, 4}}, false}, {"front", {{2, 3}, {1, 5}}, true, {"b", "a <1>"}}};
  const std::string svg = hs::line_plot_svg(plot);
  BOOST_TEST(well_formed(svg), svg);
  BOOST_TEST(count(svg, "<path ") == 1u);    // the front's line, none for the scatter
  BOOST_TEST(count(svg, "<circle ") == 6u);  // 5 points and the scatter's legend mark
  BOOST_TEST(count(svg, ">a &lt;1&gt;</text>") == 1u);
  BOOST_TEST(count(svg, "<title>front b: 2, 3</title>") == 1u);  // a label stays with its point
}

BOOST_AUTO_TEST_CASE(the_pareto_front_keeps_the_points_nothing_beats_on_both) {
  // (cost, time): lower is better for both.
  const std::vector<std::pair<double, double>> points{{3, 1}, {1, 5}, {2, 3}, {2, 4}, {4, 1}, {1, 6}, {5, 0.5}};
  BOOST_TEST(hs::pareto_front(points, false) == (std::vector<std::size_t>{1, 2, 0, 6}),
             boost::test_tools::per_element());
  // (cost, utilization): higher utilization is better.
  const std::vector<std::pair<double, double>> busy{{1, 0.2}, {2, 0.1}, {2, 0.5}, {3, 0.5}, {4, 0.9}};
  BOOST_TEST(hs::pareto_front(busy, true) == (std::vector<std::size_t>{0, 2, 4}), boost::test_tools::per_element());
  BOOST_TEST(hs::pareto_front(std::vector<std::pair<double, double>>{}, false).empty());
}
