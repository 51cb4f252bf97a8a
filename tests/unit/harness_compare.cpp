// `wanlab compare`: results.json files read back, errors with their place,
// the table with speedups relative to the first result.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "wanlab/harness/compare.hpp"

using wanlab::harness::compare_table;
using wanlab::harness::parse_result;
using wanlab::harness::read_result;

namespace {

std::string results(double iteration_s, double utilization, const std::string& schedule, int streams) {
  return R"({
  "experiment": "atlas-3dc",
  "runtime": "podman",
  "mean_iteration_s": )" + std::to_string(iteration_s) + R"(,
  "mean_gpu_utilization": )" + std::to_string(utilization) + R"(,
  "mean_bubble_fraction": )" + std::to_string(1 - utilization) + R"(,
  "iterations": [
    {"index": 0, "time_s": 2.0, "wan_bytes": {"east->west": 1000000, "west->east": 3000000}},
    {"index": 1, "time_s": 1.0, "wan_bytes": {"east->west": 3000000, "west->east": 1000000}}
  ],
  "configuration": {"schedule": ")" + schedule + R"(", "placement": ["east", "west"], "streams": )" +
         std::to_string(streams) + R"(, "temporal_sharing": true, "scale": 0.5, "note": "caf\u00e9 \"quoted\""}
})";
}

std::string error_of(const std::string& text) {
  try {
    parse_result(text, "runs/x");
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_the_fields_it_shows) {
  const auto row = parse_result(results(1.5, 0.6, "atlas", 8), "runs/atlas");
  BOOST_TEST(row.label == "runs/atlas");
  BOOST_TEST(row.experiment == "atlas-3dc");
  BOOST_TEST(row.runtime == "podman");
  BOOST_TEST(row.schedule == "atlas");
  BOOST_TEST(row.placement == "east,west");
  BOOST_TEST(row.streams == 8);
  BOOST_TEST(row.temporal_sharing);
  BOOST_TEST(row.scale == 0.5);
  BOOST_TEST(row.iterations == 2);
  BOOST_TEST(row.iteration_s == 1.5);
  BOOST_TEST(row.utilization == 0.6);
  BOOST_TEST(row.wan_bytes_per_iteration == 4e6);  // (4 MB + 4 MB) / 2 iterations
}

BOOST_AUTO_TEST_CASE(bad_files_say_where_and_what) {
  BOOST_TEST(error_of("{\n  \"experiment\": \"x\",\n  \"runtime\" \"podman\"\n}").find("runs/x: line 3, column 13: expected ':'") !=
             std::string::npos);
  BOOST_TEST(error_of("[1, 2]").find("not a JSON object") != std::string::npos);
  BOOST_TEST(error_of("{\"experiment\": \"x\"").find("expected '}'") != std::string::npos);
  BOOST_TEST(error_of("{\"a\": tru}").find("unexpected character 't'") != std::string::npos);
  BOOST_TEST(error_of("{\"a\": 1} x").find("unexpected text after the document") != std::string::npos);
  std::string deep(100, '[');
  BOOST_TEST(error_of(deep).find("nested more than 64 deep") != std::string::npos);
  std::string missing = results(1, 0.5, "1f1b", 1);
  missing.replace(missing.find("\"mean_iteration_s\""), 18, "\"mean_iteration\"");
  BOOST_TEST(error_of(missing).find("runs/x: no \"mean_iteration_s\"") != std::string::npos);
  std::string mistyped = results(1, 0.5, "1f1b", 1);
  mistyped.replace(mistyped.find("\"streams\": 1"), 12, "\"streams\": \"one\"");
  BOOST_TEST(error_of(mistyped).find("runs/x.configuration: \"streams\" is not a number") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(reads_a_directory_or_a_file) {
  const auto dir = std::filesystem::temp_directory_path() / "wanlab-test-compare";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "results.json") << results(2.0, 0.3, "1f1b", 1);
  BOOST_TEST(read_result(dir.string()).iteration_s == 2.0);
  BOOST_TEST(read_result((dir / "results.json").string()).schedule == "1f1b");
  BOOST_CHECK_THROW(read_result((dir / "absent").string()), std::runtime_error);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(table_shows_speedup_over_the_first) {
  const auto baseline = parse_result(results(2.0, 0.3, "1f1b", 1), "baseline");
  const auto atlas = parse_result(results(0.5, 0.8, "atlas", 8), "atlas");
  const std::string table = compare_table({baseline, atlas});
  BOOST_TEST(table.find("SPEEDUP") != std::string::npos);
  const auto atlas_line = table.substr(table.find("\natlas"));
  BOOST_TEST(atlas_line.find("4.00x") != std::string::npos);
  BOOST_TEST(atlas_line.find("80.0%") != std::string::npos);
  BOOST_TEST(table.substr(table.find("\nbaseline")).find("1.00x") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(prefill_columns_side_by_side_with_training) {
  std::string with_prefill = results(1.5, 0.3, "atlas", 8);
  with_prefill.insert(with_prefill.find("\"iterations\""), R"("prefill": {"mean_gpu_utilization": 0.91,
    "prefill_tokens_per_s": 4321.5, "ttft_s": {"p50": 0.8, "p90": 1.2, "p99": 2.5},
    "requests": {"arrived": 12, "served": 10, "rejected": 1, "failed": 1, "unfinished": 0},
    "training_delay_s": 0.002},
  )");
  const auto atlas = parse_result(results(1.5, 0.3, "atlas", 8), "atlas");
  const auto bubbletea = parse_result(with_prefill, "bt");
  BOOST_TEST(!atlas.prefill.has_value());
  BOOST_REQUIRE(bubbletea.prefill.has_value());
  BOOST_TEST(bubbletea.prefill->utilization == 0.91);
  BOOST_TEST(bubbletea.prefill->served == 10);
  BOOST_TEST(bubbletea.prefill->ttft_p99_s == 2.5);
  const std::string table = compare_table({atlas, bubbletea});
  BOOST_TEST(table.find("UTIL+PF") != std::string::npos);
  BOOST_TEST(table.find("91.0%") != std::string::npos);
  BOOST_TEST(table.find("4322") != std::string::npos);
  // Without any prefill result, no prefill table.
  BOOST_TEST(compare_table({atlas}).find("UTIL+PF") == std::string::npos);
  // A prefill object missing a field names it.
  std::string broken = with_prefill;
  broken.replace(broken.find("\"served\""), 8, "\"servd\"");
  BOOST_TEST(error_of(broken).find("runs/x.prefill.requests: no \"served\"") != std::string::npos);
}
