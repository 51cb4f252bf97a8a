// `wanlab compare`: results.json files read back through Results, errors that
// name the file and the field, the table with a column per run and speedups
// relative to the first. Linked against wanlab_harness_plan only: compare
// needs no kernel.
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "wanlab/harness/tools/compare.hpp"

using namespace wanlab::harness;

namespace {

Results results(double iteration_s, double utilization, const std::string& schedule, int streams) {
  Results r;
  r.experiment = "atlas-3dc";
  r.runtime = "podman";
  r.run.mean_iteration_s = iteration_s;
  r.run.mean_gpu_utilization = utilization;
  r.run.mean_bubble_fraction = 1 - utilization;
  r.iterations.push_back(IterationSummary{0, 2.0, 0, {}, 0, 0, 0, {{"east->west", 1000000}, {"west->east", 3000000}}});
  r.iterations.push_back(IterationSummary{1, 1.0, 0, {}, 0, 0, 0, {{"east->west", 3000000}, {"west->east", 1000000}}});
  r.configuration = {{"schedule", schedule}, {"placement", {"east", "west"}},
                     {"streams", streams},   {"temporal_sharing", true},
                     {"scale", 0.5},         {"note", "caf\u00e9 \"quoted\""}};
  return r;
}

std::string text(const Results& r) { return results_text(r); }

std::string error_of(const std::string& json) {
  try {
    parse_result(json, "runs/x/results.json");
  } catch (const ResultsError& error) {
    return error.what();
  }
  return "(no error)";
}

// A temporary directory per test, removed at its end.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) : path(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string run(const std::string& name, const Results& r) const {
    std::filesystem::create_directories(path / name);
    std::ofstream(path / name / "results.json") << text(r);
    return (path / name).string();
  }
};

// The table's line that starts with `name`, split at runs of spaces after the name.
std::vector<std::string> cells(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name, 0) != 0) continue;
    std::istringstream words(line.substr(name.size()));
    std::vector<std::string> out;
    for (std::string word; words >> word;) out.push_back(word);
    return out;
  }
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_the_fields_it_shows) {
  const auto row = parse_result(text(results(1.5, 0.6, "atlas", 8)), "runs/atlas");
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

BOOST_AUTO_TEST_CASE(bad_files_say_which_file_and_field_in_one_line) {
  const std::string good = text(results(1, 0.5, "1f1b", 1));
  std::string unquoted = good;
  unquoted.replace(unquoted.find("\"runtime\":"), 10, "\"runtime\" ");
  const std::string syntax = error_of(unquoted);
  BOOST_TEST(syntax.find("runs/x/results.json: line 3, column ") == 0, syntax);
  BOOST_TEST(error_of("[1, 2]") == "runs/x/results.json: is not an object");
  std::string missing = good;
  missing.replace(missing.find("\"mean_iteration_s\""), 18, "\"mean_iteration\"");
  BOOST_TEST(error_of(missing) == "runs/x/results.json: no \"mean_iteration_s\"");
  std::string mistyped = good;
  mistyped.replace(mistyped.find("\"streams\": 1"), 12, "\"streams\": \"one\"");
  BOOST_TEST(error_of(mistyped) == "runs/x/results.json.configuration: \"streams\" is not a whole number");
  std::string fraction = good;
  fraction.replace(fraction.find("\"east->west\": 3000000"), 22, "\"east->west\": 1.5");
  BOOST_TEST(error_of(fraction) == "runs/x/results.json.iterations[1].wan_bytes: \"east->west\" is not a whole number");
  for (const std::string& message : {syntax, error_of(missing), error_of(mistyped)})
    BOOST_TEST(message.find('\n') == std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(reads_a_directory_or_a_file_and_names_the_file) {
  const TempDir dir("wanlab-test-compare-read");
  const std::string run = dir.run("a", results(2.0, 0.3, "1f1b", 1));
  BOOST_TEST(read_result(run).iteration_s == 2.0);
  BOOST_TEST(read_result(run + "/results.json").schedule == "1f1b");
  std::string absent;
  try {
    read_result((dir.path / "absent").string());
  } catch (const ResultsError& error) {
    absent = error.what();
  }
  BOOST_TEST(absent.find((dir.path / "absent").string() + ": cannot read results") == 0, absent);
  std::ofstream(dir.path / "a" / "results.json") << "{\"experiment\": 3}";
  std::string wrong;
  try {
    read_result(run);
  } catch (const ResultsError& error) {
    wrong = error.what();
  }
  BOOST_TEST(wrong == run + "/results.json: \"experiment\" is not a string");
}

BOOST_AUTO_TEST_CASE(three_runs_make_three_columns_in_order) {
  const TempDir dir("wanlab-test-compare-three");
  std::vector<ResultRow> rows;
  rows.push_back(read_result(dir.run("baseline", results(2.0, 0.3, "1f1b", 1))));
  rows.push_back(read_result(dir.run("atlas", results(0.5, 0.8, "atlas", 8))));
  rows.push_back(read_result(dir.run("half", results(1.0, 0.5, "gpipe", 4))));
  const std::string table = compare_table(rows);
  const std::string head = table.substr(0, table.find('\n'));
  const auto baseline_at = head.find("/baseline"), atlas_at = head.find("/atlas"), half_at = head.find("/half");
  BOOST_TEST_REQUIRE(baseline_at != std::string::npos, table);
  BOOST_TEST(baseline_at < atlas_at);
  BOOST_TEST(atlas_at < half_at);
  BOOST_TEST(half_at != std::string::npos);
  BOOST_TEST(cells(table, "speedup") == (std::vector<std::string>{"1.00x", "4.00x", "2.00x"}), table);
  BOOST_TEST(cells(table, "schedule") == (std::vector<std::string>{"1f1b", "atlas", "gpipe"}), table);
  BOOST_TEST(cells(table, "streams") == (std::vector<std::string>{"1", "8", "4"}), table);
  BOOST_TEST(cells(table, "GPU utilization") == (std::vector<std::string>{"30.0%", "80.0%", "50.0%"}), table);
  BOOST_TEST(cells(table, "WAN MB / iteration") == (std::vector<std::string>{"4.0", "4.0", "4.0"}), table);
  // Every line has a cell per run: the columns line up under the heads.
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);
  const std::size_t width = line.size();
  while (std::getline(lines, line) && line.rfind("speedup:", 0) != 0) BOOST_TEST(line.size() == width, line);
}

BOOST_AUTO_TEST_CASE(prefill_lines_side_by_side_with_training) {
  Results with_prefill = results(1.5, 0.3, "atlas", 8);
  PrefillResults prefill;
  prefill.summary.mean_gpu_utilization = 0.91;
  prefill.summary.prefill_tokens_per_s = 4321.5;
  prefill.summary.ttft_p50_s = 0.8;
  prefill.summary.ttft_p99_s = 2.5;
  prefill.summary.requests = 12;
  prefill.summary.served = 10;
  prefill.summary.rejected = 1;
  prefill.summary.failed = 1;
  with_prefill.prefill = prefill;
  const auto atlas = parse_result(text(results(1.5, 0.3, "atlas", 8)), "atlas");
  const auto bubbletea = parse_result(text(with_prefill), "bt");
  BOOST_TEST(!atlas.prefill.has_value());
  BOOST_REQUIRE(bubbletea.prefill.has_value());
  BOOST_TEST(bubbletea.prefill->utilization == 0.91);
  BOOST_TEST(bubbletea.prefill->served == 10);
  BOOST_TEST(bubbletea.prefill->ttft_p99_s.value_or(0) == 2.5);
  const std::string table = compare_table({atlas, bubbletea});
  BOOST_TEST(cells(table, "utilization + prefill") == (std::vector<std::string>{"-", "91.0%"}), table);
  BOOST_TEST(cells(table, "prefill tokens/s") == (std::vector<std::string>{"-", "4322"}), table);
  BOOST_TEST(cells(table, "requests served") == (std::vector<std::string>{"-", "10"}), table);
  // Without any prefill result, no prefill lines.
  BOOST_TEST(compare_table({atlas}).find("utilization + prefill") == std::string::npos);
  // A prefill object missing a field names it.
  std::string broken = text(with_prefill);
  broken.replace(broken.find("\"served\""), 8, "\"servd\"");
  BOOST_TEST(error_of(broken) == "runs/x/results.json.prefill.requests: no \"served\"");
}

// Strings from results.json went to the terminal as they were (escape codes,
// newlines); a cell shows them escaped and cut.
BOOST_AUTO_TEST_CASE(text_from_the_files_is_escaped_and_cut_in_the_table) {
  Results r = results(1, 0.5, "1f1b", 1);
  r.experiment = "\x1b[2J\x1b[31mred\nline";
  r.runtime = std::string(4096, 'r');
  const std::string table = compare_table({parse_result(text(r), "runs/\x1b]0;title\x07")});
  BOOST_TEST(table.find('\x1b') == std::string::npos, table);
  BOOST_TEST(table.find('\x07') == std::string::npos, table);
  BOOST_TEST(cells(table, "experiment") == (std::vector<std::string>{"\\x1b[2J\\x1b[31mred\\x0aline"}), table);
  BOOST_TEST(cells(table, "runtime") == (std::vector<std::string>{std::string(40, 'r') + "..."}), table);
  BOOST_TEST(table.find("runs/\\x1b]0;title\\x07") != std::string::npos, table);
}

// A number past a double (1e999) once escaped as nlohmann's own error,
// without the file's name; a syntax error quoted what the parser stopped at.
BOOST_AUTO_TEST_CASE(json_errors_name_the_file_and_quote_nothing_of_it) {
  std::string huge = text(results(1, 0.5, "1f1b", 1));
  huge.replace(huge.find("\"mean_iteration_s\": 1"), 21, "\"mean_iteration_s\": 1e999");
  const std::string overflow = error_of(huge);
  BOOST_TEST(overflow.starts_with("runs/x/results.json: line 4, column "), overflow);
  BOOST_TEST(overflow.ends_with(": a number past what a double holds"), overflow);
  BOOST_TEST(overflow.find("1e999") == std::string::npos, overflow);
  const std::string garbage = error_of("root:$y$j9T$SECRET:19000:0:99999:7:::\n");
  BOOST_TEST(garbage.starts_with("runs/x/results.json: line 1, column "), garbage);
  BOOST_TEST(garbage.find("SECRET") == std::string::npos, garbage);
  BOOST_TEST(garbage.find("root") == std::string::npos, garbage);
  const std::string string_cut = error_of("{\"experiment\": \"SECRET" + std::string(1000, 's'));
  BOOST_TEST(string_cut.find("SECRET") == std::string::npos, string_cut);
}

// A run that served nothing has no TTFT: "-", and null in results.json.
BOOST_AUTO_TEST_CASE(nothing_served_shows_no_ttft) {
  Results with_prefill = results(1.5, 0.3, "atlas", 8);
  PrefillResults prefill;
  prefill.summary.requests = 4;
  prefill.summary.rejected = 4;
  with_prefill.prefill = prefill;
  const std::string json = text(with_prefill);
  BOOST_TEST(json.find("\"p50\": null") != std::string::npos, json);
  const auto row = parse_result(json, "none");
  BOOST_REQUIRE(row.prefill.has_value());
  BOOST_TEST(!row.prefill->ttft_p50_s.has_value());
  const std::string table = compare_table({row});
  BOOST_TEST(cells(table, "TTFT p50 (s)") == (std::vector<std::string>{"-"}), table);
  BOOST_TEST(cells(table, "TTFT p99 (s)") == (std::vector<std::string>{"-"}), table);
}

namespace {

long max_rss_kb() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

// compare read a whole results.json as a tree: 100 MB took 1.9 GB. It reads
// what it shows as a stream now: a 64 MB file's iterations cost about the
// text itself, where the tree took about 20 times the text.
BOOST_AUTO_TEST_CASE(a_large_results_file_is_read_in_little_memory) {
  const std::string good = text(results(1, 0.5, "1f1b", 1));
  const std::string one =
      R"({"index": 1, "time_s": 1.0, "tokens_per_s": 0, "gpu_utilization": [0.5, 0.5, 0.5, 0.5], )"
      R"("mean_gpu_utilization": 0, "bubble_fraction": 0, "network_blocked_s": 0, "wan_bytes": {"east->west": 2}},)";
  const std::size_t count = (64u << 20) / one.size();
  std::string big = good.substr(0, good.find("\"iterations\": [") + 15);
  big.reserve((64u << 20) + good.size());
  for (std::size_t i = 0; i < count; ++i) big += one;
  big += good.substr(good.find("\"iterations\": [") + 15);
  const long before_kb = max_rss_kb();
  const auto row = parse_result(big, "big");
  const long grown_mb = (max_rss_kb() - before_kb) / 1024;
  BOOST_TEST(row.iterations == static_cast<int>(count) + 2);
  BOOST_TEST(row.wan_bytes_per_iteration == (2.0 * count + 8e6) / (count + 2), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(grown_mb < 100, grown_mb << " MB more at the peak");
}

namespace {

// A run with prefill: requests served (TTFT 4, 1, 5 and 2 s; arrived at 0.5,
// 1, 2.5 and 3 s), one rejected, an SLO of 3 s and a first iteration of 2 s.
Results with_requests() {
  Results r = results(1.5, 0.3, "atlas", 8);
  r.configuration["prefill"] = {{"enabled", true}, {"ttft_slo_s", 3.0}};
  PrefillResults prefill;
  prefill.summary = PrefillSummary{
      .gpu_utilization = {},
      .mean_gpu_utilization = 0.9,
      .prefill_tokens_per_s = 1000.25,
      .requests = 5,
      .served = 4,
      .rejected = 1,
      .ttft_p50_s = 3,
      .ttft_p90_s = {},
      .ttft_p99_s = 4.97,
      .kv_bytes = {},
      .prediction_error_s = {},
      .prediction_error_relative = {.start_p50 = 0, .start_p90 = 0.5, .length_p50 = 0, .length_p90 = 0.25},
      .training_delay_s = 0.125};
  prefill.requests = {{0, 0.5, 100, "served", 4.0, ""},
                      {1, 1.0, 100, "served", 1.0, ""},
                      {2, 2.0, 100, "rejected", std::nullopt, "TTFT SLO of 3 s cannot be met"},
                      {3, 2.5, 100, "served", 5.0, ""},
                      {4, 3.0, 100, "served", 2.0, ""}};
  r.prefill = prefill;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(line);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(csv_has_a_line_per_run_under_the_documented_columns) {
  const auto plain = parse_result(text(results(2.0, 0.25, "1f1b", 1)), "runs/plain");
  const auto bt = parse_result(text(with_requests()), "runs/bt");
  const std::vector<std::string> lines = lines_of(compare_csv({plain, bt}));
  BOOST_TEST_REQUIRE(lines.size() == 3u);
  BOOST_TEST(lines[0] ==
             "label,experiment,runtime,schedule,placement,streams,temporal_sharing,scale,iterations,iteration_s,"
             "utilization,bubble,wan_mb_per_iteration,utilization_with_prefill,prefill_tokens_per_s,ttft_p50_s,"
             "ttft_p99_s,served,rejected,failed,training_delay_s,ttft_slo_s,served_over_slo,"
             "served_over_slo_first_iteration,emulation_kept_up,wake_late_share,wake_late_p99_ms,cpu_busy_mean,"
             "cpu_saturated_share,releaser_late_share,planned_iteration_s,slowdown_transfers_s,slowdown_link_gate_s,"
             "slowdown_gpu_held_s,slowdown_wake_ups_s,slowdown_other_s,steps_per_iteration,step_s,"
             "bubble_start_error_rel_p90,bubble_length_error_rel_p90,cpu_stolen_mean");
  BOOST_TEST(lines[1] ==
             "runs/plain,atlas-3dc,podman,1f1b,\"east,west\",1,true,0.5,2,2,0.25,0.75,4,,,,,,,,,,,,,,,,,,,,,,,,1,2,,,");
  // Over the SLO of 3 s: the requests of 4 and 5 s; of them, the one that
  // arrived before the first iteration's end (2 s).
  BOOST_TEST(lines[2] ==
             "runs/bt,atlas-3dc,podman,atlas,\"east,west\",8,true,0.5,2,1.5,0.3,0.7,4,0.9,1000.25,3,4.97,4,1,0,0.125,3,"
             "2,1,,,,,,,,,,,,,1,1.5,0.5,0.25,");
}

// A real run's slowdown against its plan: a line of the table ("-" for a
// simulated run) and its planned iteration and causes in the CSV.
BOOST_AUTO_TEST_CASE(the_slowdown_against_the_plan_is_shown_per_run) {
  Results real = results(2.0, 0.25, "atlas", 1);
  real.slowdown = TrainingSlowdown{1, 2.0, 1.6, SlowdownCauses{0.25, 0.0, 0.05, 0.125, -0.025}, OpStartLateness{}};
  const std::vector<ResultRow> rows{parse_result(text(real), "real"),
                                    parse_result(text(results(1.6, 0.3, "atlas", 1)), "simulated")};
  BOOST_TEST_REQUIRE(rows[0].slowdown.has_value());
  BOOST_TEST((*rows[0].slowdown == *real.slowdown));
  BOOST_TEST(!rows[1].slowdown.has_value());
  const std::string table = compare_table(rows);
  BOOST_TEST((cells(table, "vs its plan") == std::vector<std::string>{"+25.0%", "-"}), table);
  const std::vector<std::string> lines = lines_of(compare_csv(rows));
  BOOST_TEST(lines.at(1).ends_with(",1.6,0.125,0.05,0.25,0,-0.025,1,2,,,"), lines.at(1));
  BOOST_TEST(lines.at(2).ends_with(",,,,,,,1,1.6,,,"), lines.at(2));
}

// A real run says whether its emulation kept up: a line of the table, a note
// with the verdict for a run that fell behind, a CSV column; "-" and an empty
// cell for a run without the figure (simulated).
BOOST_AUTO_TEST_CASE(the_emulation_verdict_is_shown_per_run) {
  Results kept = results(1.0, 0.5, "atlas", 1), behind = kept;
  EmulationSamples samples;
  samples.wake_late_ns = {100'000};
  samples.compute_ns = 1'000'000'000;
  samples.cpu_stolen = {0.25};
  kept.emulation = judge_emulation(samples);
  samples.wake_late_ns = {100'000'000};  // 10% of the compute
  behind.emulation = judge_emulation(samples);
  const std::vector<ResultRow> rows{parse_result(text(kept), "kept"), parse_result(text(behind), "behind"),
                                    parse_result(text(results(1.0, 0.5, "atlas", 1)), "simulated")};
  BOOST_TEST((rows[0].emulation_kept_up == std::optional<bool>(true)));
  BOOST_TEST((rows[1].emulation_kept_up == std::optional<bool>(false)));
  BOOST_TEST(!rows[2].emulation_kept_up.has_value());
  const std::string table = compare_table(rows);
  // With the hypervisor's steal where the verdict names it (from 0.5% up).
  BOOST_TEST((cells(table, "emulation") ==
              std::vector<std::string>{"kept", "up,", "25%", "stolen", "FELL", "BEHIND,", "25%", "stolen", "-"}),
             table);
  BOOST_TEST(table.find("behind: emulation fell behind: workers woke 10.0% of compute late") != std::string::npos,
             table);
  BOOST_TEST(table.find("kept: ") == std::string::npos, table);
  const std::vector<std::string> lines = lines_of(compare_csv(rows));
  // kept_up, wake_late_share, wake_late_p99_ms, cpu_busy_mean, cpu_saturated_share, releaser_late_share,
  // the slowdown's six, steps_per_iteration, step_s, the two bubble errors, cpu_stolen_mean
  BOOST_TEST(lines.at(1).ends_with(",true,0.0001,0.1,0,0,,,,,,,,1,1,,,0.25"), lines.at(1));
  BOOST_TEST(lines.at(2).ends_with(",false,0.1,100,0,0,,,,,,,,1,1,,,0.25"), lines.at(2));
  BOOST_TEST(lines.at(3).ends_with(",,,,,,,,,,,,,1,1,,,"), lines.at(3));
}

BOOST_AUTO_TEST_CASE(csv_numbers_read_back_the_same_and_text_cannot_split_a_line) {
  Results r = results(0.1 + 0.2, 1.0 / 3, "1f1b", 1);
  r.experiment = "a \"quoted\", name\nwith a newline";
  const std::vector<std::string> lines = lines_of(compare_csv({parse_result(text(r), "x")}));
  BOOST_TEST_REQUIRE(lines.size() == 2u);
  BOOST_TEST(lines[1].starts_with("x,\"a \\\"\"quoted\\\"\", name\\x0awith a newline\",podman,"), lines[1]);
  BOOST_TEST(lines[1].find(",0.30000000000000004,0.3333333333333333,") != std::string::npos, lines[1]);
}

BOOST_AUTO_TEST_CASE(markdown_is_the_table_with_a_column_per_run) {
  const auto plain = parse_result(text(results(2.0, 0.25, "1f1b", 1)), "runs/a|b");
  const auto bt = parse_result(text(with_requests()), "runs/bt");
  const std::string markdown = compare_markdown({plain, bt});
  const std::vector<std::string> lines = lines_of(markdown);
  BOOST_TEST_REQUIRE(lines.size() > 4u);
  BOOST_TEST(lines[0] == "| | runs/a\\|b | runs/bt |");
  BOOST_TEST(lines[1] == "|---|---:|---:|");
  BOOST_TEST(lines[2] == "| experiment | atlas-3dc | atlas-3dc |");
  BOOST_TEST(markdown.find("| placement | east,west | east,west |\n") != std::string::npos, markdown);
  BOOST_TEST(markdown.find("| speedup | 1.00x | 1.33x |\n") != std::string::npos, markdown);
  BOOST_TEST(markdown.find("| requests served | - | 4 |\n") != std::string::npos, markdown);
  // The same lines as the table, and its notes under them.
  const std::string table = compare_table({plain, bt});
  BOOST_TEST(std::count(markdown.begin(), markdown.end(), '\n') == std::count(table.begin(), table.end(), '\n') + 2);
  BOOST_TEST(markdown.ends_with(table.substr(table.find("speedup: "))), markdown);
}

BOOST_AUTO_TEST_CASE(ttfts_are_every_served_request_in_order) {
  const auto bt = parse_result(text(with_requests()), "runs/bt");
  BOOST_TEST(ttft_csv(bt) == "percentile,ttft_s\n25.00,1.0000\n50.00,2.0000\n75.00,4.0000\n100.00,5.0000\n");
  Results none = with_requests();
  none.prefill->requests = {{0, 0.5, 100, "rejected", std::nullopt, "no room"}};
  BOOST_TEST(ttft_csv(parse_result(text(none), "none")) == "percentile,ttft_s\n");
  std::string message;
  try {
    ttft_csv(parse_result(text(results(1, 0.5, "1f1b", 1)), "runs/plain"));
  } catch (const ResultsError& error) {
    message = error.what();
  }
  BOOST_TEST(message == "runs/plain: ran without prefill: no TTFTs");
}

// Request rows are read one at a time, each checked as results_from_json
// checks it; a bad one is named with its index.
BOOST_AUTO_TEST_CASE(bad_request_rows_are_named_with_their_index) {
  const std::string good = text(with_requests());
  const std::string second = "[\n        1,";
  BOOST_TEST_REQUIRE(good.find(second) != std::string::npos, good);
  auto replaced = [&](const std::string& row) {
    std::string out = good;
    const auto at = out.find(second);
    out.replace(at, out.find(']', at) + 1 - at, row);
    return out;
  };
  const std::string where = "runs/x/results.json.prefill.request_outcomes[1]: ";
  const std::string shape = where + "is not [id, arrival_s, prompt_tokens, state, ttft_s, reason]";
  BOOST_TEST(error_of(replaced("[1, 1.0, 100, \"served\", 1.0]")) == shape);
  BOOST_TEST(error_of(replaced("[1, 1.0, 100, \"served\", 1.0, \"\", 7, 8, 9]")) == shape);
  BOOST_TEST(error_of(replaced("{\"id\": 1}")) == shape);
  BOOST_TEST(error_of(replaced("7")) == shape);
  BOOST_TEST(error_of(replaced("[1, 1.0, 100, [\"served\"], 1.0, \"\"]")) == where + "\"state\" is not a string");
  BOOST_TEST(error_of(replaced("[1, \"soon\", 100, \"served\", 1.0, \"\"]")) ==
             where + "\"arrival_s\" is not a number");
  std::string no_rows = good;
  no_rows.replace(no_rows.find("\"request_outcomes\""), 18, "\"request_outcome\"");
  BOOST_TEST(error_of(no_rows) == "runs/x/results.json.prefill: no \"request_outcomes\"");
}

BOOST_AUTO_TEST_CASE(a_directory_without_results_is_one_line_naming_the_file) {
  const TempDir dir("wanlab-test-compare-empty");
  std::string message;
  try {
    read_result(dir.path.string());
  } catch (const ResultsError& error) {
    message = error.what();
  }
  BOOST_TEST(message.starts_with((dir.path / "results.json").string() + ": cannot read results: "), message);
  BOOST_TEST(message.find('\n') == std::string::npos, message);
}

// The served requests are kept (what the SLO counts and the TTFTs are made
// from), a few bytes each: a 32 MB file of them costs less than its text.
BOOST_AUTO_TEST_CASE(many_requests_cost_less_than_their_text) {
  const std::string good = text(with_requests());
  const std::string one = R"([7, 1.25, 1469, "served", 2.5, ""],)";
  const std::size_t count = (32u << 20) / one.size();
  const std::string rows = "\"request_outcomes\": [";
  std::string big = good.substr(0, good.find(rows) + rows.size());
  big.reserve((32u << 20) + good.size());
  for (std::size_t i = 0; i < count; ++i) big += one;
  big += good.substr(good.find(rows) + rows.size());
  const long before_kb = max_rss_kb();
  const auto row = parse_result(big, "big");
  const long grown_mb = (max_rss_kb() - before_kb) / 1024;
  BOOST_REQUIRE(row.prefill.has_value());
  BOOST_TEST(row.prefill->ttfts_s.size() == count + 4);
  BOOST_TEST(row.prefill->served_over_slo.value_or(0) == 2);
  BOOST_TEST(grown_mb < 32, grown_mb << " MB more at the peak");
}

// A DiLoCo run's iteration is an outer round of inner steps (results.json
// per_step): beside an Atlas run the table compares time and WAN bytes per
// step, and the speedup is per step, not per iteration.
BOOST_AUTO_TEST_CASE(a_diloco_round_is_compared_per_step) {
  Results diloco = results(40.0, 0.4, "streaming-diloco", 8);
  diloco.steps = StepFigures{20, 2.0, 200000};
  const auto atlas_row = parse_result(text(results(4.0, 0.3, "atlas", 8)), "atlas");
  const auto diloco_row = parse_result(text(diloco), "diloco");
  BOOST_TEST(diloco_row.steps_per_iteration == 20);
  BOOST_TEST(atlas_row.steps_per_iteration == 1);
  const std::string table = compare_table({atlas_row, diloco_row});
  BOOST_TEST(cells(table, "steps / iteration") == (std::vector<std::string>{"1", "20"}), table);
  BOOST_TEST(cells(table, "step (s)") == (std::vector<std::string>{"4.000", "2.000"}), table);
  BOOST_TEST(cells(table, "WAN MB / step") == (std::vector<std::string>{"4.0", "0.2"}), table);
  BOOST_TEST(cells(table, "speedup") == (std::vector<std::string>{"1.00x", "2.00x"}), table);
  BOOST_TEST(table.find("time per training step") != std::string::npos);
  BOOST_TEST(lines_of(compare_csv({diloco_row}))[1].ends_with(",20,2,,,"));
  // Without a DiLoCo run the table stays as it was.
  BOOST_TEST(compare_table({atlas_row}).find("step (s)") == std::string::npos);
}
