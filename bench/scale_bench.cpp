// The simulator at scale: how long make_plan and one simulated
// iteration take against the GPU count (1k, 10k, 100k over 16 DCs) and the
// DC count (4, 16, 64 at 10k GPUs), with the growth from one row to the next,
// in wall and CPU seconds (the growth from CPU seconds).
// Run by bench/run-scale-bench.sh; nothing here touches the network.
//
// Every job: GPT-3's shape (96 layers, hidden 12288, context 2048), 32
// microbatches, tp 8, one pipeline stage per DC (pp = DCs, Atlas placement and
// schedule, temporal sharing), dp = GPUs / (8 x pp), H100 compute at 40% MFU,
// a [fabric] with its defaults. The WAN: every DC pair 30 ms one way at
// 100 Gbit/s (a uniform mesh: the point is the simulator's cost, not a region
// map), hosts with 256 MB TCP buffers and no slow start after idle, as
// scenarios/scale-16dc.toml has them: with the kernel's default restart, each
// of the replicas that take turns on a link (temporal sharing) starts again
// from 10 segments, and 1,024 GPUs simulate to a 185 s iteration (27 s
// without it; 6.1 s once the windows are warm).
#include <fmt/format.h>

#include <time.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "wanlab/harness/report/outputs.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace hs = wanlab::harness;

namespace {

struct Point {
  int gpus;
  int dcs;
};

std::string scenario_text(int dcs) {
  std::string text =
      "name = \"bench\"\n[defaults]\nrate = \"100gbit\"\ndelay = \"30ms\"\nqueue = \"1bdp\"\n"
      "[host]\ntcp_wmem_max = \"256mb\"\ntcp_rmem_max = \"256mb\"\ntcp_slow_start_after_idle = false\n";
  for (int dc = 0; dc < dcs; ++dc) text += fmt::format("[[dc]]\nname = \"dc{}\"\n", dc);
  return text;
}

// An H100's 80 GB, but an H200's 141 GB where 96 layers over so few
// stages need more (4 DCs: 24 layers a stage, 97 GB with tp 8): the
// benchmark times the simulator, and make_plan refuses a stage that does
// not fit.
int memory_gb(int stages) { return stages < 8 ? 141 : 80; }

std::string experiment_text(const Point& point) {
  const int tp = 8;
  const int pp = point.dcs;
  const int dp = point.gpus / (tp * pp);
  std::string text = fmt::format(
      "name = \"scale\"\ntestbed = \"bench.toml\"\nschedule = \"atlas\"\niterations = 1\n"
      "[model]\nlayers = 96\nhidden = 12288\nseq_len = 2048\nmicrobatches = 32\n"
      "[parallel]\npp = {}\ndp = {}\ntp = {}\n[compute]\npeak_tflops = 989\nmfu = 0.4\n[fabric]\n[gpus]\n"
      "memory_gb = {}\n",
      pp, dp, tp, memory_gb(point.dcs));
  for (int dc = 0; dc < point.dcs; ++dc) text += fmt::format("dc{} = {}\n", dc, dp * tp);
  return text;
}

// Wall and CPU seconds of one step: the box may be shared, and the CPU time
// of a single-threaded step holds under load where its wall time does not.
struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = cpu_seconds();

  static double cpu_seconds() {
    timespec now{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
  }
};

struct Seconds {
  double wall = 0;
  double cpu = 0;
};

Seconds seconds_since(const Clock& start) {
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start.wall).count(),
          Clock::cpu_seconds() - start.cpu};
}

struct Row {
  Point point{};
  int gpus_used = 0;
  std::uint64_t ops = 0;
  Seconds plan;
  Seconds simulate;
  double iteration_s = 0;
  double utilization = 0;
  Seconds outputs;  // `wanlab train --out`'s files, as written by default (--ranks auto)
  double output_mb = 0;
};

// What `--out DIR` holds after write_run_outputs: every file's size.
double megabytes_under(const std::string& dir) {
  std::uintmax_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) bytes += entry.file_size();
  return static_cast<double>(bytes) / 1e6;
}

Row measure(const Point& point) {
  const auto scenario = wanlab::emulator::parse_scenario(scenario_text(point.dcs), "bench.toml");
  const hs::Experiment experiment = hs::parse_experiment(experiment_text(point), "scale.toml");
  Row row;
  row.point = point;
  Clock start;
  const hs::Plan plan = hs::make_plan(experiment, scenario);
  row.plan = seconds_since(start);
  row.gpus_used = plan.gpus_used;
  row.ops = hs::plan_size(plan).ops_per_iteration;
  start = Clock{};
  const hs::RunRecord record = hs::simulate(plan, scenario, hs::link_model_for(scenario, experiment.scale), 1);
  row.simulate = seconds_since(start);
  const auto summary = hs::summarize_run(hs::summarize(record));
  row.iteration_s = summary.mean_iteration_s;
  row.utilization = summary.mean_gpu_utilization;
  const wanlab::bench::WorkDir out("wanlab-scale-outputs");
  start = Clock{};
  hs::write_run_outputs(record, scenario, {"wanlab_scale_bench", out.path, ""}, hs::select_ranks(record, {}),
                        wanlab::base::OutputDir::open(out.path));
  row.outputs = seconds_since(start);
  row.output_mb = megabytes_under(out.path);
  return row;
}

void print_table(const std::string& title, const std::vector<Point>& points) {
  fmt::print("\n{}\n\n", title);
  fmt::print(
      "| GPUs | DCs | pp x dp x tp | ops per iteration | make_plan (s) | make_plan CPU (s) | simulate 1 iteration (s) "
      "| "
      "simulate CPU (s) | growth (simulate CPU) | growth (make_plan CPU) | growth (GPUs) | simulated iteration, cold "
      "windows (s) | "
      "GPU utilization | write --out's files (s) | their size (MB) |\n");
  fmt::print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  const Row* previous = nullptr;
  std::vector<Row> rows;
  rows.reserve(points.size());
  // The growth of value(row) from the row before.
  const auto growth = [&](const Row& row, auto value) {
    return previous ? fmt::format("{:.1f}x", static_cast<double>(value(row)) / value(*previous)) : std::string("-");
  };
  for (const Point& point : points) {
    rows.push_back(measure(point));
    const Row& row = rows.back();
    const int dp = row.point.gpus / (8 * row.point.dcs);
    fmt::print(
        "| {} | {} | {} x {} x 8 | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {} | {:.3f} | {:.1f}% | {:.2f} | "
        "{:.1f} |\n",
        row.gpus_used, row.point.dcs, row.point.dcs, dp, row.ops, row.plan.wall, row.plan.cpu, row.simulate.wall,
        row.simulate.cpu, growth(row, [](const Row& r) { return r.simulate.cpu; }),
        growth(row, [](const Row& r) { return r.plan.cpu; }), growth(row, [](const Row& r) { return r.gpus_used; }),
        row.iteration_s, 100 * row.utilization, row.outputs.wall, row.output_mb);
    std::fflush(stdout);
    previous = &row;
  }
}

const wanlab::bench::Program kProgram{
    "wanlab_scale_bench",
    "make_plan and one simulated iteration against GPU and DC count (no root, no network; under a minute)",
    {wanlab::bench::flag("quick", "without the 100k-GPU point"),
     wanlab::bench::flag("point", "only the point of GPUS over DCS, given as operands (e.g. under perf)")},
    "[GPUS DCS]"};

int run(const wanlab::base::Options& options) {
  const auto& operands = options.positionals();
  if (options.flag("point")) {
    if (operands.size() != 2) throw wanlab::base::UsageError("--point: expected GPUS and DCS after the options");
    const auto number = [](const std::string& text, const char* what) {
      try {
        return wanlab::base::parse_integer<int>(text, 1, 10'000'000);
      } catch (const wanlab::base::ParseError& error) {
        throw wanlab::base::UsageError(std::string("--point: ") + what + ": " + error.what());
      }
    };
    print_table("One point", {{number(operands[0], "GPUS"), number(operands[1], "DCS")}});
    return 0;
  }
  if (!operands.empty()) throw wanlab::base::UsageError("GPUS DCS: only with --point");
  std::vector<Point> by_gpus{{1024, 16}, {10000, 16}};
  if (!options.flag("quick")) by_gpus.push_back({100000, 16});
  print_table("Simulate time against GPU count (16 DCs, one stage per DC)", by_gpus);
  print_table("Simulate time against DC count (10,000 GPUs, one stage per DC)", {{10000, 4}, {10000, 16}, {10000, 64}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return wanlab::bench::main_of(kProgram, run, argc, argv); }
