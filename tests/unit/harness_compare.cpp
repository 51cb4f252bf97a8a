// `wanlab compare`: results.json files read back through Results, errors that
// name the file and the field, the table with a column per run and speedups
// relative to the first. Linked against wanlab_harness_plan only: compare
// needs no kernel.
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>

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
