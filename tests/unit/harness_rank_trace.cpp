// Per-rank traces (rank_trace.hpp): each rank's file is JSON in the PyTorch
// profiler's shape, holds every event of its worker once as a kernel (NCCL
// kernels for the communication), and an annotation per iteration.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "harness_support.hpp"
#include "wanlab/harness/report/rank_trace.hpp"

namespace hs = wanlab::harness;
using harness_test::JsonValue;

BOOST_AUTO_TEST_CASE(a_rank_holds_its_workers_events_as_kernels_and_its_iterations_as_steps) {
  const harness_test::SimulatedRun run = harness_test::pp_across_dc_run();
  for (int worker : {0, 5}) {
    BOOST_TEST_CONTEXT("rank " << worker) {
      const JsonValue trace = harness_test::parse_json(hs::rank_trace_json(run.record, worker));
      BOOST_TEST(trace["schemaVersion"].number == 1);
      BOOST_TEST(trace["distributedInfo"]["rank"].number == worker);
      BOOST_TEST(trace["distributedInfo"]["world_size"].number == 8);
      BOOST_TEST(trace["distributedInfo"]["backend"].text == "nccl");
      std::map<std::string, int> expected;  // "compute" / "nccl": this worker's events of each kind
      for (const auto& event : run.record.events) {
        if (event.worker != worker) continue;
        const bool compute =
            event.kind == wanlab::harness::OpKind::forward || event.kind == wanlab::harness::OpKind::backward;
        ++expected[compute ? "compute" : "nccl"];
      }
      std::map<std::string, int> found;
      int steps = 0;
      double last_step_end = 0;
      for (const JsonValue& event : trace["traceEvents"].items) {
        if (event["ph"].text == "M") continue;
        BOOST_TEST(event["dur"].number >= 0);
        if (event["cat"].text == "user_annotation") {
          BOOST_TEST(event["name"].text == "ProfilerStep#" + std::to_string(steps));
          BOOST_TEST(event["ts"].number >= last_step_end);
          last_step_end = event["ts"].number + event["dur"].number;
          ++steps;
          continue;
        }
        BOOST_TEST(event["cat"].text == "kernel");
        const bool nccl = event["name"].text.starts_with("ncclDevKernel_");
        BOOST_TEST(event["args"]["stream"].number == (nccl ? 13 : 7));
        BOOST_TEST(event["tid"].number == event["args"]["stream"].number);
        ++found[nccl ? "nccl" : "compute"];
      }
      BOOST_TEST(steps == 2);
      BOOST_TEST(expected["compute"] == 2 * 2 * 4);  // 2 iterations x forward and backward x 4 microbatches
      BOOST_TEST(found["compute"] == expected["compute"]);
      BOOST_TEST(found["nccl"] == expected["nccl"]);
      BOOST_TEST(expected["nccl"] > 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(one_file_per_rank) {
  const harness_test::SimulatedRun run = harness_test::pp_across_dc_run();
  const auto dir = std::filesystem::temp_directory_path() / ("wanlab-ranks-" + std::to_string(::getpid()));
  hs::write_rank_traces(run.record, hs::all_ranks(run.record.plan), wanlab::base::OutputDir::open(dir.string()));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir / "ranks")) ++files;
  BOOST_TEST(files == run.record.plan.workers.size());
  std::ifstream file(dir / "ranks" / "rank-7.json");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  BOOST_TEST(text == hs::rank_trace_json(run.record, 7));
  std::filesystem::remove_all(dir);
}
