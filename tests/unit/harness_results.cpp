// Results, results.json's type: written and read back equal (a simulated run,
// and one with every optional part: prefill, measured and simulated
// transfers, a request without TTFT), the document's top-level fields in their
// order, and a malformed file named with the field.
#include <boost/test/unit_test.hpp>
#include <set>

#include <string>
#include <vector>

#include "harness_support.hpp"
#include "wanlab/base/late_bounds.hpp"
#include "wanlab/harness/record/results.hpp"

using namespace wanlab::harness;

namespace {

// Every optional part present, and values that are awkward to print.
Results full_results() {
  Results r;
  r.experiment = "bubbletea \"3dc\"";
  r.runtime = "sandbox";
  r.runtime_detail = "podman: crun refused\tto start";
  r.run = RunSummary{1.0 / 3, 0.7125, 0.2875, 123456.789, 1};
  r.iterations.push_back(
      IterationSummary{0, 2.5, 1e-7, {0.1, 0.2}, 0.15, 0.85, 0.01, {{"a->b", 1}, {"b->a", 1ull << 40}}});
  r.iterations.push_back(IterationSummary{1, 1.25, 3e9, {0.3}, 0.3, 0.7, 0, {}});
  TransferTimes times{TransferPercentiles{12, 0.001, 0.002, 0.5}, TransferPercentiles{12, 0, 1e-6, 2e-6}, std::nullopt};
  TransferTimes measured = times;
  measured.retransmitted_segments = 1234;
  r.transfers.push_back(LinkTransfers{"a->b", measured, times});
  r.transfers.push_back(LinkTransfers{"b->a", std::nullopt, times});
  PrefillResults prefill;
  prefill.summary.gpu_utilization = {0.9, 0.95};
  prefill.summary.mean_gpu_utilization = 0.925;
  prefill.summary.mean_training_utilization = 0.7;
  prefill.summary.prefill_tokens_per_s = 4321.5;
  prefill.summary.requests = 3;
  prefill.summary.served = 1;
  prefill.summary.rejected = 1;
  prefill.summary.failed = 1;
  prefill.summary.ttft_p50_s = 0.8;
  prefill.summary.ttft_p90_s = 1.2;
  prefill.summary.ttft_p99_s = 2.5;
  prefill.summary.kv_bytes = {{"a->c", 123456}};
  prefill.summary.prediction_error_s.start_p50 = 0.001;
  prefill.summary.prediction_error_relative.length_p90 = 0.25;
  prefill.summary.training_delay_s = 0.002;
  prefill.notes = {"prefill worker 3 died: killed by signal 9"};
  prefill.requests = {RequestRow{0, 0.5, 1500, "served", 0.75, ""},
                      RequestRow{1, 0.5, 9000, "rejected", std::nullopt, "TTFT SLO of 3 s cannot be met"}};
  r.prefill = prefill;
  EmulationSamples samples;
  samples.wake_late_ns = {50'000, 70'000, 2'000'000};
  samples.compute_ns = 400'000'000;
  samples.cpu_busy = {0.5, 0.97};
  samples.cpu_stolen = {0.02, 0.125};  // written and read back
  samples.cpus = 2;
  samples.idle_pollers = 2;
  samples.idle_polled_share = 0.375;  // written and read back
  samples.release_path = "nfqueue";
  samples.releaser = ReleaserLateness{1000, {}, 1'200'000, 2};
  samples.releaser_pairs = {{"a", "b", ReleaserLateness{600, {}, 1'200'000, 0}}};
  for (const std::uint64_t bound : wanlab::base::kLateBoundsNs) {  // 40 verdicts 5 us to 1.2 ms late, 30 of them a->b
    samples.releaser->over[bound] = 40 * 5'000 / std::max<std::uint64_t>(5'000, bound);
    samples.releaser_pairs[0].late.over[bound] = 30 * 5'000 / std::max<std::uint64_t>(5'000, bound);
  }
  r.emulation = judge_emulation(samples);
  r.slowdown = TrainingSlowdown{3, 2.68, 2.4, SlowdownCauses{0.05, 0.001, 0.01, 0.2, 0.019},
                                OpStartLateness{96, 1.5, 180.25, 240.5}};
  r.configuration = {
      {"schedule", "atlas"}, {"placement", "atlas"}, {"streams", 4}, {"temporal_sharing", false}, {"scale", 0.25}};
  r.plan = {{"workers", nlohmann::ordered_json::array()}};
  r.seed = 18446744073709551615ull;
  r.versions = {{"wanlab", "0.1"}, {"compiler", "gcc 12"}};
  r.scenario_path = "scenarios/three-dc.toml";
  r.scenario_text = "name = \"x\"\n\x01";
  return r;
}

std::vector<std::string> keys_of(const std::string& text) {
  std::vector<std::string> keys;
  const auto document = nlohmann::ordered_json::parse(text);
  for (const auto& item : document.items()) keys.push_back(item.key());
  return keys;
}

std::string error_of(const std::string& text) {
  try {
    results_from_json(text, "out/results.json");
  } catch (const ResultsError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_simulated_run_round_trips) {
  const harness_test::SimulatedRun run = harness_test::pp_across_dc_run();
  const Results made = make_results(run.record, harness_test::kThreeDcScenario);
  const std::string text = results_text(made);
  BOOST_TEST(text == results_json(run.record, harness_test::kThreeDcScenario));
  const Results read = results_from_json(text, "results.json");
  BOOST_TEST((read == made));
  BOOST_TEST(read.iterations.size() == 2u);
  BOOST_TEST(results_text(read) == text);
}

BOOST_AUTO_TEST_CASE(every_optional_part_round_trips) {
  const Results made = full_results();
  const Results read = results_from_json(results_text(made), "results.json");
  BOOST_TEST((read == made));
  BOOST_REQUIRE(read.prefill.has_value());
  BOOST_TEST(!read.prefill->requests.at(1).ttft_s.has_value());
  BOOST_TEST(read.seed == 18446744073709551615ull);
  BOOST_TEST(read.run.mean_iteration_s == 1.0 / 3);  // exactly: shortest form that reads back the same
}

// Files written before the bubble prediction's error was reported relative
// to the bubble still read, with those figures at 0.
BOOST_AUTO_TEST_CASE(a_file_without_the_relative_prediction_error_reads) {
  const Results made = full_results();
  auto document = nlohmann::ordered_json::parse(results_text(made));
  BOOST_REQUIRE(document["prefill"].erase("bubble_prediction_error_relative") == 1u);
  const Results read = results_from_json(document.dump(), "results.json");
  BOOST_REQUIRE(read.prefill.has_value());
  BOOST_TEST(read.prefill->summary.prediction_error_relative.length_p90 == 0.0);
  BOOST_TEST(read.prefill->summary.prediction_error_s.start_p50 == 0.001);
}

// Files written before idle polling could pause were polled all run long
// when they had pollers.
BOOST_AUTO_TEST_CASE(a_file_without_the_polled_share_reads_as_polled_throughout) {
  const Results made = full_results();
  auto document = nlohmann::ordered_json::parse(results_text(made));
  BOOST_TEST(document["emulation"]["idle_polled_share"] == 0.375);
  BOOST_REQUIRE(document["emulation"].erase("idle_polled_share") == 1u);
  Results read = results_from_json(document.dump(), "results.json");
  BOOST_TEST(read.emulation->idle_polled_share == 1.0);
  document["emulation"]["idle_pollers"] = 0;
  read = results_from_json(document.dump(), "results.json");
  BOOST_TEST(read.emulation->idle_polled_share == 0.0);
}

// Files written before the finer bounds have six counters a releaser (and
// each pair): they read, and compare still finds the share at their limit.
BOOST_AUTO_TEST_CASE(a_file_with_the_six_coarse_releaser_counters_reads) {
  const Results made = full_results();
  auto document = nlohmann::ordered_json::parse(results_text(made));
  auto& releaser = document["emulation"]["releaser"];
  const std::set<std::string> kept{"over_10us", "over_100us", "over_300us", "over_1ms", "over_3ms", "over_10ms"};
  const auto coarse = [&](nlohmann::ordered_json& counters) {
    nlohmann::ordered_json left = nlohmann::ordered_json::object();
    for (const auto& [key, value] : counters.items())
      if (!key.starts_with("over_") || kept.contains(key)) left[key] = value;
    counters = left;
  };
  for (auto& pair : releaser["pairs"]) coarse(pair);
  coarse(releaser);
  BOOST_TEST(releaser.size() == 11u);  // verdicts, six counters, max_ns, dropped, limit_ns, pairs
  const Results read = results_from_json(document.dump(), "results.json");
  BOOST_REQUIRE(read.emulation.has_value());
  const ReleaserLateness& lateness = *read.emulation->releaser;
  BOOST_TEST(lateness.over.size() == 6u);
  BOOST_TEST(lateness.over.at(100'000) == made.emulation->releaser->over.at(100'000));
  BOOST_TEST(releaser_late_share(lateness, 100'000).value() == 0.002);
  BOOST_TEST(!releaser_late_share(lateness, 200'000).has_value());
  BOOST_TEST(read.emulation->releaser_pairs.at(0).late.over.size() == 6u);
}

BOOST_AUTO_TEST_CASE(top_level_fields_keep_their_names_and_order) {
  const std::vector<std::string> expected{"experiment",
                                          "runtime",
                                          "runtime_detail",
                                          "mean_iteration_s",
                                          "mean_gpu_utilization",
                                          "mean_bubble_fraction",
                                          "mean_tokens_per_s",
                                          "means_skip_first_iterations",
                                          "prefill",
                                          "iterations",
                                          "transfers",
                                          "emulation",
                                          "slowdown",
                                          "configuration",
                                          "plan",
                                          "seed",
                                          "versions",
                                          "scenario"};
  BOOST_TEST(keys_of(results_text(full_results())) == expected, boost::test_tools::per_element());
  const auto document = nlohmann::ordered_json::parse(results_text(full_results()));
  BOOST_TEST(document.at("prefill").at("request_outcomes").at(1).dump() ==
             R"([1,0.5,9000,"rejected",null,"TTFT SLO of 3 s cannot be met"])");
}

BOOST_AUTO_TEST_CASE(a_malformed_file_names_the_file_and_field) {
  const std::string good = results_text(full_results());
  std::string text = good;
  text.replace(text.find("\"served\": 1"), 11, "\"served\": true");
  BOOST_TEST(error_of(text) == "out/results.json.prefill.requests: \"served\" is not a whole number");
  text = good;
  text.replace(text.find("\"rejected\",\n"), 11, "7,");
  BOOST_TEST(error_of(text) == "out/results.json.prefill.request_outcomes[1]: \"state\" is not a string");
  text = good;
  text.replace(text.find("\"p90\": 0.002"), 12, "\"p90\": \"x\"");
  BOOST_TEST(error_of(text) == "out/results.json.transfers.a->b.measured.transfer_s: \"p90\" is not a number");
  BOOST_TEST(error_of("{\"experiment\": \"x\",").find("out/results.json: line 1, column ") == 0);
  BOOST_TEST(error_of("").find("out/results.json: line 1, column 1: ") == 0, error_of(""));
}

// A run that served nothing claims no TTFT: null, read back as none.
BOOST_AUTO_TEST_CASE(no_request_served_is_null_not_zero) {
  Results made = full_results();
  made.prefill->summary.served = 0;
  made.prefill->summary.ttft_p50_s.reset();
  made.prefill->summary.ttft_p90_s.reset();
  made.prefill->summary.ttft_p99_s.reset();
  const std::string text = results_text(made);
  const auto document = nlohmann::ordered_json::parse(text);
  BOOST_TEST(document.at("prefill").at("ttft_s").dump() == R"({"p50":null,"p90":null,"p99":null})");
  const Results read = results_from_json(text, "results.json");
  BOOST_TEST((read == made));
  BOOST_TEST(!read.prefill->summary.ttft_p50_s.has_value());
}

// 1e999 was nlohmann's out_of_range, which no catch named the file for.
BOOST_AUTO_TEST_CASE(a_number_past_a_double_names_the_file) {
  std::string text = results_text(full_results());
  text.replace(text.find("\"seed\": 18446744073709551615"), 28, "\"seed\": 1e999");
  const std::string message = error_of(text);
  BOOST_TEST(message == "out/results.json: a number past what a double holds", message);
  BOOST_TEST(error_of("{\"x\": root:SECRET}").find("SECRET") == std::string::npos, error_of("{\"x\": root:SECRET}"));
}
