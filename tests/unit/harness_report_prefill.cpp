// Reports of a run with BubbleTea's prefill: results.json's "prefill" object,
// prefill spans and KV caches in trace.json, prefill in timeline.svg's colour
// and legend. The record is a simulated training run with a PrefillRecord
// written by hand, so every figure the reports show is known.
#include <boost/test/unit_test.hpp>

#include <set>

#include "harness_support.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/record/results.hpp"
#include "wanlab/harness/report/timeline.hpp"
#include "wanlab/harness/report/trace.hpp"

using namespace wanlab::harness;
using harness_test::count_substring;
using harness_test::JsonValue;
using harness_test::parse_json;

namespace {

using Run = harness_test::SimulatedRun;

// A simulated 1F1B run (pp 4 over a, b, c, a; dp 2) of training only, then
// given by hand, in iteration 1, one prefill span in the longest idle window
// of worker 0's GPU, a served request, a rejected one and a failed one.
Run run_with_prefill() {
  Run run = harness_test::pp_across_dc_run();
  run.record.plan.experiment.prefill.enabled = true;
  run.record.plan.experiment.prefill.decode_dc = "c";
  const std::int64_t start = run.record.iteration_start_ns.at(1);
  Window longest;
  const auto offsets = idle_offsets(run.record, 1);
  for (const Window& window : offsets.at(0))
    if (window.end_ns - window.start_ns > longest.end_ns - longest.start_ns) longest = window;
  BOOST_REQUIRE(longest.end_ns - longest.start_ns > 2'000'000);
  const std::int64_t idle = start + longest.start_ns;
  PrefillRecord prefill;
  prefill.spans.push_back(PrefillSpan{0, 7, 0, 1500, 0, 80, idle + 500'000, idle + 1'500'000});
  prefill.kv.push_back(KvTransfer{7, 0, "a->c", 123456, idle + 1'500'000, idle + 1'900'000});
  prefill.requests.push_back(RequestOutcome{0, start, 1500, RequestState::served, 7, idle + 1'900'000, ""});
  prefill.requests.push_back(
      RequestOutcome{1, start, 9000, RequestState::rejected, -1, -1, "TTFT SLO of 3 s cannot be met"});
  prefill.requests.push_back(RequestOutcome{2, start, 800, RequestState::failed, 8, -1, "prefill worker 3 died"});
  prefill.training_delay_ns.assign(run.plan.workers.size(), 0);
  prefill.notes.push_back("prefill worker 3 died: killed by signal 9");
  run.record.prefill = std::move(prefill);
  return run;
}

}  // namespace

BOOST_AUTO_TEST_CASE(results_json_has_the_prefill_figures_and_every_request) {
  Run run = run_with_prefill();
  JsonValue results = parse_json(results_json(run.record, harness_test::kThreeDcScenario));
  BOOST_REQUIRE(results.has("prefill"));
  const JsonValue& prefill = results["prefill"];
  BOOST_TEST(prefill["requests"]["arrived"].number == 3);
  BOOST_TEST(prefill["requests"]["served"].number == 1);
  BOOST_TEST(prefill["requests"]["rejected"].number == 1);
  BOOST_TEST(prefill["requests"]["failed"].number == 1);
  BOOST_TEST(prefill["kv_bytes"]["a->c"].number == 123456);
  // Training only, as results.json's own mean; with prefill, more.
  BOOST_TEST(prefill["mean_training_utilization"].number == results["mean_gpu_utilization"].number,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(prefill["mean_gpu_utilization"].number > prefill["mean_training_utilization"].number);
  const double ttft =
      static_cast<double>(run.record.prefill->requests[0].first_token_ns - run.record.prefill->requests[0].arrival_ns) /
      1e9;
  BOOST_TEST(prefill["ttft_s"]["p50"].number == ttft, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(prefill["notes"][0].text == "prefill worker 3 died: killed by signal 9");
  const JsonValue& outcomes = prefill["request_outcomes"];
  BOOST_REQUIRE(outcomes.items.size() == 3u);
  BOOST_TEST(outcomes[0][3].text == "served");
  BOOST_TEST(outcomes[0][4].number == ttft, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(outcomes[1][3].text == "rejected");
  BOOST_TEST(outcomes[1][5].text == "TTFT SLO of 3 s cannot be met");
  BOOST_TEST(results["configuration"]["prefill"]["enabled"].boolean);
  BOOST_TEST(results["configuration"]["prefill"]["decode_dc"].text == "c");
}

BOOST_AUTO_TEST_CASE(without_prefill_results_json_has_no_prefill_object) {
  Run run = run_with_prefill();
  run.record.prefill.reset();
  JsonValue results = parse_json(results_json(run.record, ""));
  BOOST_TEST(!results.has("prefill"));
  BOOST_TEST(timeline_svg(run.record, 1).find("prefill") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(trace_shows_prefill_on_the_gpu_and_kv_on_its_link) {
  Run run = run_with_prefill();
  JsonValue trace = parse_json(trace_json(run.record));
  std::map<int, std::string> kv_tracks;
  int prefill_spans = 0, kv_spans = 0;
  for (const JsonValue& event : trace["traceEvents"].items) {
    if (event["ph"].text == "M" && event["name"].text == "thread_name" && event["pid"].number == 2)
      kv_tracks[static_cast<int>(event["tid"].number)] = event["args"]["name"].text;
    if (event["ph"].text != "X") continue;
    if (event["cat"].text == "prefill") {
      ++prefill_spans;
      BOOST_TEST(event["pid"].number == 1);
      BOOST_TEST(event["tid"].number == 1);                                         // worker 0's track
      BOOST_TEST(event["dur"].number == 1000, boost::test_tools::tolerance(1e-9));  // 1 ms in us
      BOOST_TEST(event["args"]["tokens"].number == 1500);
    }
    if (event["cat"].text == "kv") {
      ++kv_spans;
      BOOST_TEST(kv_tracks[static_cast<int>(event["tid"].number)] == "a->c KV");
      BOOST_TEST(event["args"]["bytes"].number == 123456);
    }
  }
  BOOST_TEST(prefill_spans == 1);
  BOOST_TEST(kv_spans == 1);
}

BOOST_AUTO_TEST_CASE(timeline_draws_prefill_in_its_colour_with_a_legend_entry) {
  Run run = run_with_prefill();
  const std::string svg = timeline_svg(run.record, 1);
  BOOST_TEST(count_substring(svg, "fill=\"#edc948\"><title>prefill batch 7") == 1);
  BOOST_TEST(svg.find("prefill of inference requests (BubbleTea)") != std::string::npos);
  // Iteration 0 has no prefill: no boxes, the legend still says what the colour means.
  BOOST_TEST(count_substring(timeline_svg(run.record, 0), "<title>prefill batch") == 0);
  BOOST_TEST(count_substring(svg, "<title>") == count_substring(svg, "</title></rect>"));
}
