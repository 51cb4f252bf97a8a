// `wanlab whatif`'s sweep files: the reader and its bad inputs, the points
// made from the base experiment and scenario (errors at the sweep file's
// line), a sweep whose trend is known, and its CSV, table and plots.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>

#include "support/two_dc.hpp"
#include "wanlab/harness/tools/whatif.hpp"

namespace hs = wanlab::harness;
namespace fs = std::filesystem;

namespace {

// A directory with the two-DC scenario, an experiment on it and sweep files.
class Files {
 public:
  Files() : dir_(fs::temp_directory_path() / ("wanlab-whatif-" + std::to_string(::getpid()))) {
    fs::create_directories(dir_ / "sweeps");
    write("two.toml", wanlab::test::two_dc_scenario("two"));
    write("pp.toml", R"(name = "pp"
testbed = "two.toml"
schedule = "1f1b"
iterations = 2
[model]
layers = 4
hidden = 1024
seq_len = 1024
microbatches = 4
[parallel]
pp = 2
[compute]
forward_ms = 10
backward_ms = 20
[gpus]
east = 1
west = 1
)");
  }
  ~Files() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  // A sweep file in sweeps/, on ../pp.toml unless it says otherwise.
  std::string sweep(const std::string& body) const {
    return write("sweeps/s.toml", "experiment = \"../pp.toml\"\n" + body);
  }

 private:
  fs::path dir_;
};

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const hs::SweepError& error) {
    return error.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(a_grid_runs_the_last_axis_fastest_and_zip_pairs_the_values) {
  Files files;
  hs::Sweep grid = hs::load_sweep(files.sweep(R"([axes]
"parallel.dp" = [1, 2]
"testbed.link[0].delay" = ["10ms", "20ms", "40ms"]
)"));
  BOOST_TEST(grid.size() == 6u);
  BOOST_TEST(grid.axes.at(0).key == "parallel.dp");
  BOOST_TEST(grid.axes.at(1).labels.at(2) == "40ms");
  BOOST_TEST((grid.coordinates(4) == std::vector<std::size_t>{1, 1}));
  BOOST_TEST(grid.describe(4) == "parallel.dp = 2, testbed.link[0].delay = 20ms");
  BOOST_TEST(grid.axes.at(0).where == grid.path + ":3:1");

  hs::Sweep zip = hs::load_sweep(files.sweep(R"(mode = "zip"
labels = ["baseline", "+ 4 streams"]
[axes]
"schedule" = ["1f1b", "gpipe"]
"streams" = [1, 4]
)"));
  BOOST_TEST(zip.size() == 2u);
  BOOST_TEST((zip.coordinates(1) == std::vector<std::size_t>{1, 1}));
  BOOST_TEST((zip.labels == std::vector<std::string>{"baseline", "+ 4 streams"}));
}

BOOST_AUTO_TEST_CASE(bad_sweep_files_are_one_line_at_their_line) {
  Files files;
  struct Case {
    std::string body;
    std::string expected;
  };
  for (const Case& c : {
           Case{"[axis]\n\"parallel.dp\" = [1]\n",
                ":2:2: unknown key \"axis\" in the top level; did you mean \"axes\"?"},
           Case{"mode = \"cross\"\n[axes]\nstreams = [1]\n", ":2:8: mode: expected \"grid\" or \"zip\", got \"cross\""},
           Case{"[axes]\n\"parallel..dp\" = [1]\n", ":3:1: axes: \"parallel..dp\" is not a key path"},
           Case{"[axes]\n\"link[x].delay\" = [1]\n", ":3:1: axes: \"link[x].delay\" is not a key path"},
           Case{"[axes]\nstreams = []\n",
                ":3:11: axes: streams: expected a list of one or more values, got an empty list"},
           Case{"[axes]\nstreams = 4\n", ":3:11: axes: streams: expected a list of one or more values, got 4"},
           Case{"[axes]\n", ": no [axes]"},
           Case{"mode = \"zip\"\n[axes]\nstreams = [1, 2]\nschedule = [\"1f1b\"]\n",
                ":5:1: axes: schedule: 1 values, but streams has 2"},
           Case{"[axes]\nstreams = [1\n", ":3:"},
           Case{"labels = [\"a\"]\n[axes]\nstreams = [1]\n", ":2:10: labels: only with mode = \"zip\""},
           Case{"mode = \"zip\"\nlabels = [\"a\"]\n[axes]\nstreams = [1, 2]\n",
                ":3:10: labels: expected a list of 2 names, one per point, got 1 entries"},
           Case{"[set]\n\"a.\" = 1\n[axes]\nstreams = [1]\n", ":3:1: set: \"a.\" is not a key path"},
       }) {
    BOOST_TEST_CONTEXT(c.body) {
      const std::string path = files.sweep(c.body);
      const std::string error = error_of([&] { hs::load_sweep(path); });
      BOOST_TEST(error.starts_with(path), error);
      BOOST_TEST(contains(error, c.expected), error);
      BOOST_TEST(!contains(error, "\n"));
    }
  }
  const std::string missing = files.write("sweeps/m.toml", "experiment = \"nothing.toml\"\n[axes]\nstreams = [1]\n");
  BOOST_TEST(contains(error_of([&] { hs::load_sweep(missing); }), "m.toml:1:14: experiment: no experiment file at"));
  const std::string none = files.write("sweeps/n.toml", "[axes]\nstreams = [1]\n");
  BOOST_TEST(contains(error_of([&] { hs::load_sweep(none); }), "n.toml:1:1: missing required key \"experiment\""));
}

BOOST_AUTO_TEST_CASE(each_point_sets_its_values_in_the_experiment_and_the_scenario) {
  Files files;
  const hs::Sweep sweep = hs::load_sweep(files.sweep(R"([set]
iterations = 1
[axes]
"parallel.dp" = [1, 2]
"testbed.link[0].delay" = ["5ms", "80ms"]
"testbed.intra_dc.rate" = ["25gbit"]
)"));
  const hs::SweepPoint point = hs::make_point(sweep, 3);
  BOOST_TEST(point.experiment.parallel.dp == 2);
  BOOST_TEST(point.experiment.parallel.pp == 2);  // the base's, kept
  BOOST_TEST(point.experiment.iterations == 1);
  BOOST_TEST(point.scenario.pair(0, 1).delay_ns == 80'000'000u);
  BOOST_TEST(point.scenario.pair(0, 0).rate_bps == 25'000'000'000u);
  BOOST_TEST(point.scenario.pair(0, 0).delay_ns == 50'000u);  // the base's
  BOOST_TEST(hs::make_point(sweep, 0).scenario.pair(1, 0).delay_ns == 5'000'000u);
}

BOOST_AUTO_TEST_CASE(a_bad_value_gets_the_readers_error_at_the_sweep_files_line_named_with_its_point) {
  Files files;
  const hs::Sweep sweep = hs::load_sweep(files.sweep("[axes]\n\"parallel.dp\" = [1, 0]\n"));
  BOOST_TEST(error_of([&] { hs::make_point(sweep, 0); }) == "(no error)");
  const std::string error = error_of([&] { hs::make_point(sweep, 1); });
  BOOST_TEST(error.starts_with("point 2 of 2 (parallel.dp = 0): " + sweep.path +
                               ":3:21: parallel.dp: expected an integer from 1 to 100000, got 0"),
             error);

  // A misspelt key or table: the reader's unknown key, at the axis's line.
  for (const std::string key : {"parallel.dq", "paralel.dp"}) {
    const hs::Sweep typo = hs::load_sweep(files.sweep("[axes]\n\"" + key + "\" = [1]\n"));
    const std::string message = error_of([&] { hs::make_point(typo, 0); });
    BOOST_TEST(contains(message, typo.path + ":3:1: unknown key"), message);
    BOOST_TEST(contains(message, "did you mean"), message);
  }
  const hs::Sweep scenario = hs::load_sweep(files.sweep("[axes]\n\"testbed.link[0].delay\" = [\"fast\"]\n"));
  BOOST_TEST(
      contains(error_of([&] { hs::make_point(scenario, 0); }), scenario.path + ":3:28: link.delay: expected a time"));
  const hs::Sweep beyond = hs::load_sweep(files.sweep("[axes]\n\"testbed.link[3].delay\" = [\"1ms\"]\n"));
  BOOST_TEST(contains(error_of([&] { hs::make_point(beyond, 0); }),
                      ":3:1: testbed.link[3].delay: link in the scenario has 1 entries"));
  const hs::Sweep into_string = hs::load_sweep(files.sweep("[axes]\n\"schedule.x\" = [1]\n"));
  BOOST_TEST(contains(error_of([&] { hs::make_point(into_string, 0); }),
                      "schedule in the experiment is \"1f1b\", not a table"));
}

BOOST_AUTO_TEST_CASE(the_testbed_axis_takes_scenario_files_beside_the_sweep_file) {
  Files files;
  files.write("sweeps/far.toml", wanlab::test::two_dc_scenario("far"));
  const hs::Sweep sweep = hs::load_sweep(files.sweep("[axes]\ntestbed = [\"../two.toml\", \"far.toml\"]\n"));
  BOOST_TEST(hs::make_point(sweep, 0).scenario.name == "two");
  BOOST_TEST(hs::make_point(sweep, 1).scenario.name == "far");
}

// More delay on the one WAN hop of a two-stage pipeline never makes an
// iteration faster, nor the GPUs busier.
BOOST_AUTO_TEST_CASE(more_delay_never_makes_a_two_dc_point_faster) {
  Files files;
  const hs::Sweep sweep = hs::load_sweep(files.sweep(R"([axes]
"schedule" = ["gpipe", "1f1b"]
"testbed.link[0].delay" = ["0ms", "5ms", "20ms", "40ms", "80ms"]
)"));
  std::size_t progress_calls = 0;
  const auto results = hs::run_sweep(sweep, [&](const hs::SweepProgress& p) {
    ++progress_calls;
    BOOST_TEST(p.done == progress_calls);
    BOOST_TEST(p.total == 10u);
  });
  BOOST_TEST_REQUIRE(results.size() == 10u);
  BOOST_TEST(progress_calls == 10u);
  for (std::size_t schedule = 0; schedule < 2; ++schedule) {
    for (std::size_t d = 1; d < 5; ++d) {
      const auto& shorter = results[schedule * 5 + d - 1];
      const auto& longer = results[schedule * 5 + d];
      BOOST_TEST(longer.iteration_s >= shorter.iteration_s, sweep.describe(schedule * 5 + d));
      BOOST_TEST(longer.gpu_utilization <= shorter.gpu_utilization + 1e-12);
    }
    // 80 ms more one way is at least that much more per iteration: every microbatch crosses twice in a row.
    BOOST_TEST(results[schedule * 5 + 4].iteration_s - results[schedule * 5].iteration_s >= 0.080);
  }
  BOOST_TEST(results[0].tokens_per_s > results[4].tokens_per_s);

  const std::string csv = hs::points_csv(sweep, results);
  BOOST_TEST(csv.starts_with(
                 "point,schedule,testbed.link[0].delay,iteration_s,gpu_utilization,tokens_per_s,wan_bytes_per_step\n"),
             csv);
  BOOST_TEST(std::count(csv.begin(), csv.end(), '\n') == 11);
  BOOST_TEST(contains(csv, "\n7,1f1b,5ms,"), csv);
  BOOST_TEST(!contains(csv, "prefill"));
  const std::string table = hs::points_table(sweep, results);
  BOOST_TEST(std::count(table.begin(), table.end(), '\n') == 11);

  // The delay axis: a number of ms per value, a line per schedule.
  const auto delay = hs::axis_plots(sweep, results, 1);
  BOOST_TEST_REQUIRE(delay.size() == 4u);
  BOOST_TEST(delay[0].x_label == "testbed.link[0].delay (ms)");
  BOOST_TEST(delay[0].x_categories.empty());
  BOOST_TEST_REQUIRE(delay[0].series.size() == 2u);
  BOOST_TEST(delay[0].series[1].name == "schedule = 1f1b");
  BOOST_TEST(delay[0].series[1].points.at(4).first == 80.0);
  BOOST_TEST(delay[1].percent);
  // The schedule axis: categories, a line per delay.
  const auto schedule = hs::axis_plots(sweep, results, 0);
  BOOST_TEST((schedule[0].x_categories == std::vector<std::string>{"gpipe", "1f1b"}));
  BOOST_TEST(schedule[0].series.size() == 5u);
  BOOST_TEST(hs::axis_plot_name(sweep.axes[1]) == "testbed.link_0_.delay.svg");
}
