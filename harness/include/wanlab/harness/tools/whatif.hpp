// `wanlab whatif`: sweeps of the simulator over any keys of an experiment
// and its testbed scenario.
//
// A sweep file (TOML) names a base experiment and axes; each axis is a dotted
// key path with a list of values:
//
//   experiment = "../experiments/atlas-3dc.toml"   # beside this file
//   mode = "grid"                                   # or "zip"
//   [set]                                           # every point (optional)
//   iterations = 2
//   [axes]
//   "parallel.dp" = [1, 2, 4]
//   "testbed.link[0].delay" = ["10ms", "40ms", "80ms"]
//
// A path starting "testbed." goes into the experiment's scenario file, any
// other into the experiment file; a segment "name[i]" is the i-th entry of an
// array ([[link]] tables, placement lists). Values are set in the parsed
// documents before the normal readers run, so every key they know is
// sweepable, and a bad value gets the reader's own error at its line in the
// sweep file. Values of "testbed" (the scenario file) are paths beside the
// sweep file. Grid: every combination, the last axis fastest; zip: the i-th
// values of every axis together (all lists of one length), optionally with
// `labels = [...]`, one name per point ("baseline", "+ 8 streams"): then the
// points are plotted against their labels in one plot, as the axes move
// together.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/report/card.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/report/line_plot.hpp"

namespace wanlab::harness {

class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class SweepMode { grid, zip };

struct SweepAxis {
  std::string key;                  // as written: "testbed.link[0].delay"
  std::vector<std::string> labels;  // each value as shown: "2", "40ms", "atlas"
  std::string where;                // "sweep.toml:7:1"
};

struct Sweep {
  std::string path;
  std::string text;             // the sweep file, read again for each point's values
  std::string experiment_path;  // resolved beside the sweep file
  SweepMode mode = SweepMode::grid;
  std::vector<std::string> fixed;   // [set] keys, in file order
  std::vector<SweepAxis> axes;      // in file order
  std::vector<std::string> labels;  // zip only: one per point, or none

  std::size_t size() const;  // the number of points
  // Point `index`'s value index on each axis.
  std::vector<std::size_t> coordinates(std::size_t index) const;
  // "parallel.dp = 2, testbed.link[0].delay = 40ms"
  std::string describe(std::size_t index) const;
};

// Throws SweepError "file:line:column: ..." (unknown keys, a key path that is
// not one, an empty axis, zip axes of different lengths, a missing experiment).
Sweep parse_sweep(std::string text, const std::string& path);
Sweep load_sweep(const std::string& path);

struct SweepPoint {
  Experiment experiment;
  emulator::Scenario scenario;
};
// The base experiment and its scenario with point `index`'s values set.
// Throws SweepError "point 3 of 12 (parallel.dp = 0): <the reader's error>".
SweepPoint make_point(const Sweep& sweep, std::size_t index);

struct PointResult {
  double iteration_s = 0;                          // summarize_run's mean
  double gpu_utilization = 0;                      // training compute / wall
  double tokens_per_s = 0;                         // training tokens
  int steps_per_iteration = 1;                     // DiLoCo: an outer round's inner steps
  double step_s = 0;                               // per training step (DiLoCo: inner step)
  double wan_bytes_per_step = 0;                   // over every WAN link
  std::optional<double> utilization_with_prefill;  // with [prefill] enabled
  std::optional<double> prefill_tokens_per_s;
  std::optional<double> ttft_p99_s;
  double simulate_s = 0;  // wall time the point took
  std::string card;       // the point's card.yaml, when asked for
};
// Plans and simulates the point for its experiment's iterations; with
// `invocation`, also writes its workload card (card.hpp) into the result.
// Throws SweepError naming the point when the planner refuses it.
PointResult run_point(const Sweep& sweep, std::size_t index, const SweepPoint& point,
                      const Invocation* invocation = nullptr);

struct SweepProgress {
  std::size_t done = 0;  // points finished
  std::size_t total = 0;
  std::chrono::duration<double> elapsed{};
  std::chrono::duration<double> remaining{};  // estimated from the mean so far
};
// Every point in order; `progress` after each.
std::vector<PointResult> run_sweep(const Sweep& sweep, const std::function<void(const SweepProgress&)>& progress = {},
                                   const Invocation* invocation = nullptr);

// points.csv: point, label (with labels), one column per axis, then iteration_s, gpu_utilization,
// tokens_per_s, step_s (where some point is a DiLoCo round of several steps), wan_bytes_per_step and, when some point
// has prefill, gpu_utilization_with_prefill, prefill_tokens_per_s, ttft_p99_s (empty where off).
std::string points_csv(const Sweep& sweep, const std::vector<PointResult>& results);
// The same as an aligned table for a terminal.
std::string points_table(const Sweep& sweep, const std::vector<PointResult>& results);
// Per axis: iteration time, utilization (with prefill too where on) and
// tokens/s against the axis, one line per combination of the other axes'
// values (grid) or one line (zip). Numbers, and strings that are one number
// with one unit ("40ms"), make a numeric x; other values are categories.
std::vector<LinePlot> axis_plots(const Sweep& sweep, const std::vector<PointResult>& results, std::size_t axis);
// A file name for the axis's plot: "parallel.dp.svg", "testbed.link_0_.delay.svg".
std::string axis_plot_name(const SweepAxis& axis);
// A zip sweep with labels: the same metrics against the labels.
std::vector<LinePlot> label_plots(const Sweep& sweep, const std::vector<PointResult>& results);

}  // namespace wanlab::harness
