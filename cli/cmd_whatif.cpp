// `wanlab whatif` (sweeps of the simulator) and `wanlab plot` (line plots
// from CSV): the harness's what-if answers as tables and pictures.
#include <fmt/core.h>

#include <filesystem>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/harness/report/line_plot.hpp"
#include "wanlab/harness/tools/whatif.hpp"

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
                                     const base::OutputDir& dir) {
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const std::string& contents) {
    dir.write(name, contents);
    written.push_back(dir.path_of(name));
  };
  write("points.csv", hs::points_csv(sweep, results));
  if (!results.empty()) {
    const base::OutputDir points = dir.subdir("points");
    for (std::size_t i = 0; i < results.size(); ++i)
      points.subdir(std::to_string(i + 1)).write("card.yaml", results[i].card);
    written.push_back(fmt::format("{}/{{1..{}}}/card.yaml", points.path(), results.size()));
  }
  if (!sweep.labels.empty()) {
    write("points.svg", hs::line_plots_svg(hs::label_plots(sweep, results)));
    return written;
  }
  for (std::size_t axis = 0; axis < sweep.axes.size(); ++axis)
    write(hs::axis_plot_name(sweep.axes[axis]), hs::line_plots_svg(hs::axis_plots(sweep, results, axis)));
  return written;
}

// Every name the sweep writes in --out, checked before it runs.
void check_sweep_outputs(const hs::Sweep& sweep, const base::OutputDir& dir) {
  dir.check("points.csv");
  dir.check("points.svg");
  for (const auto& axis : sweep.axes) dir.check(hs::axis_plot_name(axis));
  dir.check("points", /*directory=*/true);
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
  const auto out = out_dir_option(options, [&](const base::OutputDir& dir) { check_sweep_outputs(sweep, dir); });
  const bool quiet = options.flag("quiet");
  if (!quiet)
    fmt::print("{}: {} points ({}) of {}\n", sweep.path, sweep.size(),
               sweep.mode == hs::SweepMode::grid ? "grid" : "zip", sweep.experiment_path);
  const hs::Invocation invocation{command_line(), std::filesystem::current_path().string(), ""};
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
  required(options, "out", "the SVG file to write");
  const std::string out = *out_file_option(options);
  const std::string& path = options.positionals().front();
  const std::string text = base::read_regular_file(path);
  base::write_output_file(out, hs::line_plot_svg(hs::plot_from_csv(text, path, plot)));
  return 0;
}

}  // namespace wanlab::cli
