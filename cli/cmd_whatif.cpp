// `wanlab whatif` (sweeps of the simulator) and `wanlab plot` (line plots
// from CSV): the harness's what-if answers as tables and pictures.
#include <fmt/core.h>

#include <filesystem>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/harness/line_plot.hpp"
#include "wanlab/harness/whatif.hpp"

namespace wanlab::cli {
namespace hs = wanlab::harness;
namespace {

void print_progress(const hs::Sweep& sweep, const hs::SweepProgress& p) {
  fmt::print("point {}/{} ({}): elapsed {:.1f} s, about {:.1f} s left\n", p.done, p.total, sweep.describe(p.done - 1),
             p.elapsed.count(), p.remaining.count());
  std::fflush(stdout);
}

// points.csv and one SVG per axis (with labels: one against them); returns the files written.
std::vector<std::string> write_sweep(const hs::Sweep& sweep, const std::vector<hs::PointResult>& results,
                                     const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> written{dir + "/points.csv"};
  base::replace_file(written.back(), hs::points_csv(sweep, results));
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string point_dir = fmt::format("{}/points/{}", dir, i + 1);
    std::filesystem::create_directories(point_dir);
    base::replace_file(point_dir + "/card.yaml", results[i].card);
  }
  if (!results.empty()) written.push_back(fmt::format("{}/points/{{1..{}}}/card.yaml", dir, results.size()));
  if (!sweep.labels.empty()) {
    written.push_back(dir + "/points.svg");
    base::replace_file(written.back(), hs::line_plots_svg(hs::label_plots(sweep, results)));
    return written;
  }
  for (std::size_t axis = 0; axis < sweep.axes.size(); ++axis) {
    written.push_back(dir + "/" + hs::axis_plot_name(sweep.axes[axis]));
    base::replace_file(written.back(), hs::line_plots_svg(hs::axis_plots(sweep, results, axis)));
  }
  return written;
}

std::string required(const Options& options, const std::string& name, std::string_view what) {
  const auto value = options.get(name);
  if (!value || value->empty()) throw UsageError(fmt::format("--{}: required: {}", name, what));
  return *value;
}

}  // namespace

int cmd_whatif(const Options& options) {
  if (options.positionals().size() != 1) throw UsageError("expected one sweep file");
  const hs::Sweep sweep = hs::load_sweep(options.positionals().front());
  const bool quiet = options.flag("quiet");
  if (!quiet)
    fmt::print("{}: {} points ({}) of {}\n", sweep.path, sweep.size(),
               sweep.mode == hs::SweepMode::grid ? "grid" : "zip", sweep.experiment_path);
  const hs::Invocation invocation{command_line(), std::filesystem::current_path().string(), ""};
  const auto out = options.get("out");
  double printed_at_s = 0;
  const auto results = hs::run_sweep(
      sweep,
      [&](const hs::SweepProgress& p) {
        // A line a second at most: a sweep of a few seconds prints none.
        if (quiet || p.elapsed.count() - printed_at_s < 1.0) return;
        printed_at_s = p.elapsed.count();
        print_progress(sweep, p);
      },
      out ? &invocation : nullptr);
  fmt::print("{}", hs::points_table(sweep, results));
  if (out) {
    const auto written = write_sweep(sweep, results, *out);
    for (const auto& file : written) fmt::print("wrote {}\n", file);
  }
  return 0;
}

int cmd_plot(const Options& options) {
  if (options.positionals().size() != 1) throw UsageError("expected one CSV file");
  hs::CsvPlotOptions plot;
  plot.x = required(options, "x", "the x column");
  const std::string y_columns = required(options, "y", "one or more y columns, comma-separated");
  for (std::string_view ys = y_columns; !ys.empty();) {
    const auto comma = ys.find(',');
    if (comma != 0) plot.ys.emplace_back(ys.substr(0, comma));
    ys = comma == std::string_view::npos ? "" : ys.substr(comma + 1);
  }
  if (plot.ys.empty()) throw UsageError("--y: expected one or more column names, comma-separated");
  plot.series = options.get("series").value_or("");
  plot.title = options.get("title").value_or("");
  plot.x_label = options.get("xlabel").value_or("");
  plot.y_label = options.get("ylabel").value_or("");
  plot.percent = options.flag("percent");
  plot.y_min = options.decimal("ymin", -1e300, 1e300);
  const std::string out = required(options, "out", "the SVG file to write");
  const std::string& path = options.positionals().front();
  const std::string text = base::read_regular_file(path);
  base::replace_file(out, hs::line_plot_svg(hs::plot_from_csv(text, path, plot)));
  return 0;
}

}  // namespace wanlab::cli
