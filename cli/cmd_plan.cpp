// `wanlab plan`: the planner (harness/planner.hpp) over an experiment's free
// GPUs and testbed, simulated only; no testbed is brought up.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/tools/planner.hpp"

namespace wanlab::cli {
namespace hs = wanlab::harness;
namespace {

constexpr int kMaxJobs = 1024;

// One candidate per core by default.
int default_jobs() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxJobs)));
}

}  // namespace

int cmd_plan(const Options& options) {
  if (options.positionals().size() != 1) throw UsageError("expected one experiment file");
  const std::size_t top = options.integer<std::size_t>("top", 1, 10000).value_or(10);
  // Before the search, which can take minutes.
  const auto out = out_dir_option(options, [](const base::OutputDir& dir) {
    for (const char* file : {"plans.csv", "plans.svg"}) dir.check(file);
  });
  hs::PlannerOptions planner;
  planner.jobs = options.integer<int>("jobs", 1, kMaxJobs).value_or(default_jobs());
  const hs::Experiment experiment = hs::load_experiment(options.positionals().front());
  const emulator::Scenario scenario = hs::load_testbed(experiment);
  if (!options.flag("quiet")) {
    planner.progress = [](const std::string& line) {
      fmt::print(stderr, "wanlab plan: {}\n", line);
      std::fflush(stderr);
    };
  }
  const hs::PlannerReport report = hs::search_plans(experiment, scenario, planner);
  fmt::print("{}", hs::planner_table(report, top));
  if (out) {
    fmt::print("\n");
    for (const std::string& path : hs::write_planner_files(report, *out)) fmt::print("wrote {}\n", path);
  }
  return 0;
}

}  // namespace wanlab::cli
