// Reports: summaries (utilization, network waits, WAN bytes), results.json,
// trace.json and timeline.svg from a simulated run.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "harness_support.hpp"
#include "wanlab/harness/record/results.hpp"
#include "wanlab/harness/report/timeline.hpp"
#include "wanlab/harness/report/trace.hpp"

using namespace wanlab::harness;
using harness_test::count_substring;
using harness_test::JsonValue;
using harness_test::parse_json;

namespace {

using Run = harness_test::SimulatedRun;
using harness_test::pp_across_dc_run;

std::string read(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(summaries)

BOOST_AUTO_TEST_CASE(wan_bytes_count_each_cross_dc_message) {
  Run run = pp_across_dc_run();
  std::vector<IterationSummary> iterations = summarize(run.record);
  BOOST_REQUIRE(iterations.size() == 2u);
  std::map<std::string, std::uint64_t> wan(iterations[0].wan_bytes.begin(), iterations[0].wan_bytes.end());
  // Each hop carries 4 microbatches x 2 replicas of activations one way and of gradients the other.
  std::uint64_t per_hop = 4 * 2 * run.plan.activation_bytes;
  std::map<std::string, std::uint64_t> expected{{"a->b", per_hop}, {"b->a", per_hop}, {"b->c", per_hop},
                                                {"c->b", per_hop}, {"c->a", per_hop}, {"a->c", per_hop}};
  BOOST_TEST(wan == expected);
  // Each iteration's events count in their own iteration only.
  BOOST_TEST(iterations[1].wan_bytes == iterations[0].wan_bytes);
  BOOST_TEST(iterations[1].gpu_utilization == iterations[0].gpu_utilization, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(utilization_and_network_time_add_up) {
  Run run = pp_across_dc_run();
  IterationSummary summary = summarize(run.record).at(1);
  double busy_s = 4 * (5 + 10) / 1e3;  // every worker computes 4 F and 4 B
  for (double utilization : summary.gpu_utilization) {
    BOOST_TEST(utilization == busy_s / summary.time_s, boost::test_tools::tolerance(1e-6));
  }
  BOOST_TEST(summary.bubble_fraction == 1 - summary.mean_gpu_utilization, boost::test_tools::tolerance(1e-12));
  // Nothing else happens on a worker: it computes, waits, or has finished.
  BOOST_TEST(summary.network_blocked_s > 0);
  BOOST_TEST(summary.network_blocked_s + busy_s <= summary.time_s + 1e-9);
  double tokens = 2.0 * 4 * 1 * 1024;  // dp x microbatches x microbatch x seq_len
  BOOST_TEST(summary.tokens_per_s == tokens / summary.time_s, boost::test_tools::tolerance(1e-9));
  RunSummary means = summarize_run(summarize(run.record));
  BOOST_TEST(means.skipped_iterations == 1);
  BOOST_TEST(means.mean_iteration_s == summary.time_s, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(results_and_trace)

BOOST_AUTO_TEST_CASE(results_json_parses_and_holds_the_configuration) {
  Run run = pp_across_dc_run();
  JsonValue results = parse_json(results_json(run.record, harness_test::kThreeDcScenario));
  BOOST_TEST(results["runtime"].text == "simulator");
  BOOST_TEST(results["mean_iteration_s"].number > 0);
  BOOST_TEST(results["mean_gpu_utilization"].number > 0);
  BOOST_TEST(results["mean_gpu_utilization"].number < 1);
  const JsonValue& iterations = results["iterations"];
  BOOST_REQUIRE(iterations.items.size() == 2u);
  for (const char* key :
       {"time_s", "tokens_per_s", "gpu_utilization", "bubble_fraction", "network_blocked_s", "wan_bytes"}) {
    BOOST_TEST(iterations[0].has(key), key);
  }
  BOOST_TEST(iterations[0]["gpu_utilization"].items.size() == 8u);
  BOOST_TEST(iterations[0]["wan_bytes"]["a->b"].number == 8.0 * static_cast<double>(run.plan.activation_bytes));
  const JsonValue& config = results["configuration"];
  BOOST_TEST(config["schedule"].text == "1f1b");
  BOOST_TEST(config["placement"].text == "pp-across-dc");
  BOOST_TEST(config["streams"].number == 2);
  BOOST_TEST(config["parallel"]["pp"].number == 4);
  BOOST_TEST(config["compute"]["forward_ms"].number == 5);
  BOOST_TEST(results["seed"].number == 1);
  BOOST_TEST(!results["versions"]["wanlab"].text.empty());
  BOOST_TEST(results["versions"]["wanlab"].text != "unknown");
  BOOST_TEST(results["scenario"]["text"].text == harness_test::kThreeDcScenario);
  BOOST_TEST(results["plan"]["workers"].items.size() == 8u);
  BOOST_TEST(results["plan"]["stage_dc"][3].text == "a");
}

BOOST_AUTO_TEST_CASE(strings_are_escaped) {
  Run run = pp_across_dc_run();
  std::string tricky = "name = \"q\\\"uote\"\n# tab\there\n\x01";
  JsonValue results = parse_json(results_json(run.record, tricky));
  BOOST_TEST(results["scenario"]["text"].text.substr(0, 20) == tricky.substr(0, 20));
}

BOOST_AUTO_TEST_CASE(trace_has_a_named_track_per_worker_and_wan_link) {
  Run run = pp_across_dc_run();
  JsonValue trace = parse_json(trace_json(run.record));
  std::set<std::string> thread_names;
  std::set<std::pair<int, int>> used_tracks;
  int compute_events = 0;
  for (const JsonValue& event : trace["traceEvents"].items) {
    if (event["ph"].text == "M" && event["name"].text == "thread_name") {
      thread_names.insert(event["args"]["name"].text);
    }
    if (event["ph"].text == "X") {
      BOOST_TEST(event["dur"].number >= 0);
      used_tracks.insert({static_cast<int>(event["pid"].number), static_cast<int>(event["tid"].number)});
      if (event["cat"].text == "compute") ++compute_events;
    }
  }
  for (const WorkerPlan& worker_plan : run.plan.workers) {
    const Worker& worker = worker_plan.worker;
    std::string name = "stage " + std::to_string(worker.stage) + " replica " + std::to_string(worker.replica) + " (" +
                       worker.dc_name + ")";
    BOOST_TEST(thread_names.count(name) == 1u, name);
    BOOST_TEST(used_tracks.count({1, worker.id + 1}) == 1u);
  }
  for (const char* link : {"a->b", "b->c", "c->a", "b->a"}) BOOST_TEST(thread_names.count(link) == 1u, link);
  BOOST_TEST(compute_events == 2 * 8 * 8);  // iterations x workers x (4 F + 4 B)
}

BOOST_AUTO_TEST_CASE(writers_write_files_and_report_failures) {
  Run run = pp_across_dc_run();
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wanlab-report-test-" + std::to_string(::getpid()));
  const auto out = wanlab::base::OutputDir::open(dir.string());
  write_results_json(run.record, "scenario", out);
  write_trace_json(run.record, all_ranks(run.record.plan), out);
  write_timeline_svg(run.record, 0, all_ranks(run.record.plan), out);
  BOOST_TEST(parse_json(read(dir / "results.json"))["runtime"].text == "simulator");
  BOOST_TEST(parse_json(read(dir / "trace.json")).has("traceEvents"));
  BOOST_TEST(read(dir / "trace.json") == trace_json(run.record));  // written event by event, the same text
  BOOST_TEST(read(dir / "timeline.svg") == timeline_svg(run.record, 0));
  // A file the writer cannot replace (here a directory in its place) is an
  // error naming it, and nothing is left beside it.
  std::filesystem::remove(dir / "trace.json");
  std::filesystem::create_directory(dir / "trace.json");
  try {
    write_trace_json(run.record, all_ranks(run.record.plan), out);
    BOOST_FAIL("wrote over a directory");
  } catch (const wanlab::base::FileError& error) {
    BOOST_TEST(std::string(error.what()) ==
               (dir / "trace.json").string() + ": a directory; outputs are written only as regular files");
  }
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++entries;
  BOOST_TEST(entries == 3u);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(timeline)

BOOST_AUTO_TEST_CASE(svg_has_a_row_per_worker_dc_labels_and_a_legend) {
  Run run = pp_across_dc_run();
  std::string svg = timeline_svg(run.record, 1);
  BOOST_TEST(svg.rfind("<svg", 0) == 0u);
  BOOST_TEST(svg.find("</svg>") != std::string::npos);
  for (const WorkerPlan& worker_plan : run.plan.workers) {
    std::string label = "stage " + std::to_string(worker_plan.worker.stage) + " · replica " +
                        std::to_string(worker_plan.worker.replica) + "<";
    BOOST_TEST(count_substring(svg, label) == 1, label);
  }
  // a holds stages 0 and 3, then b, then c: one header each.
  for (const char* dc : {"DC a<", "DC b<", "DC c<"}) BOOST_TEST(count_substring(svg, dc) == 1, dc);
  BOOST_TEST(svg.find("class=\"legend\"") != std::string::npos);
  for (const char* entry : {"forward", "backward", "waiting for a message", "all-reduce", "idle", "across the WAN"}) {
    BOOST_TEST(svg.find(entry) != std::string::npos, entry);
  }
  BOOST_TEST(svg.find("time since the iteration started (ms)") != std::string::npos);
  // One idle background per row, and every worker's 8 compute boxes.
  BOOST_TEST(count_substring(svg, "<title>idle</title>") == 8);
  BOOST_TEST(count_substring(svg, "fill=\"#4e79a7\"><title>F") == 8 * 4);
  BOOST_TEST(count_substring(svg, "<text") == count_substring(svg, "</text>"));
  BOOST_TEST(count_substring(svg, "<title>") == count_substring(svg, "</title></rect>"));
  BOOST_CHECK_THROW(timeline_svg(run.record, 2), std::out_of_range);
}

BOOST_AUTO_TEST_SUITE_END()
