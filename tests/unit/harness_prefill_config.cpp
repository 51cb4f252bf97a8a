// BubbleTea's pure pieces: the [prefill] section and --prefill, request traces
// and the Poisson process, prefill time, KV sizes and the memory check.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>

#include "harness_support.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/experiment/prefill.hpp"
#include "wanlab/harness/model/served_model.hpp"

using namespace wanlab::harness;

namespace {

// Lines 1-21 (1-10: the small experiment); the cases below change or add
// lines. The served model is small so that memory fits at tp = 1.
const std::string kBase = harness_test::kSmallExperiment + R"([prefill]
requests = "trace.csv"
decode_dc = "c"
[prefill.model]
layers = 8
hidden = 1024
kv_heads = 8
head_dim = 128
[prefill.time]
tokens = [128, 1024, 2048, 4096, 8192]
ms = [48, 158, 308, 642, 1339]
)";

// kBase edited by line (harness_support.hpp).
std::string with_line(int line, const std::string& text) { return harness_test::with_line(kBase, line, text); }
std::string inserted(int line, const std::string& text) { return harness_test::inserted(kBase, line, text); }
std::string first_lines(int count) { return harness_test::first_lines(kBase, count); }

std::string parse_error(const std::string& toml) {
  return harness_test::error_of([&] { parse_experiment(toml, "e.toml"); });
}

Experiment parsed(const std::string& toml) { return parse_experiment(toml, "e.toml"); }

// Llama-2-70B on the splitwise-sim H100 table (REFERENCES.md).
Experiment with_table() { return parsed(kBase); }

using harness_test::BadFile;

const std::vector<BadFile>& bad_files() {
  static const std::vector<BadFile> cases{
      {"unknown prefill key", inserted(12, "requets = \"x.csv\""),
       R"(e.toml:12:1: unknown key "requets" in [prefill]; did you mean "requests"?)"},
      {"unknown served model key", inserted(15, "layer = 8"),
       R"(e.toml:15:1: unknown key "layer" in [prefill.model]; did you mean "layers"?)"},
      {"unknown time key", inserted(20, "token = [1, 2]"),
       R"(e.toml:20:1: unknown key "token" in [prefill.time]; did you mean "tokens"?)"},
      {"unknown arrivals key",
       with_line(12, R"(arrivals = { rate = "4/s", prompt_median = 1, prompt_p90 = 2, sed = 1 })"),
       R"(e.toml:12:63: unknown key "sed" in prefill.arrivals; did you mean "seed"?)"},
      {"both requests and arrivals",
       inserted(13, R"(arrivals = { rate = "4/s", prompt_median = 1469, prompt_p90 = 5194 })"),
       "e.toml:13:12: prefill.arrivals: give requests (a trace file) or arrivals (a Poisson process), not both"},
      {"neither requests nor arrivals", with_line(12, ""), "e.toml:11:1: prefill: give requests (a trace file"},
      {"no decode DC", with_line(13, ""), "e.toml:11:1: prefill: missing decode_dc"},
      {"only a subtable", first_lines(10) + "[prefill.model]\nlayers = 8\n", "e.toml:11:1: prefill: give requests"},
      {"enabled not a bool", inserted(12, "enabled = 1"),
       "e.toml:12:11: prefill.enabled: expected true or false, got 1"},
      {"empty requests path", with_line(12, "requests = \"\""), "e.toml:12:12: prefill.requests: must not be empty"},
      {"a NUL in the requests path", with_line(12, R"(requests = "trace.csv\u0000x")"),
       R"(e.toml:12:12: prefill.requests: a file name with a control character: "trace.csv\x00x")"},
      {"decode DC not a string", with_line(13, "decode_dc = 3"),
       R"(e.toml:13:13: prefill.decode_dc: expected a DC name like "europe", or "local", got 3)"},
      {"time without a unit", inserted(12, "ttft_slo = \"3\""), "e.toml:12:12: prefill.ttft_slo: expected a time"},
      {"time as a number", inserted(12, "ttft_slo = 3"),
       R"(e.toml:12:12: prefill.ttft_slo: expected a time like "3s", got 3)"},
      {"zero SLO", inserted(12, "ttft_slo = \"0s\""),
       R"(e.toml:12:12: prefill.ttft_slo: expected a time like "3s" from 1ns to 3600s, got "0s")"},
      {"guard of two minutes", inserted(12, "guard = \"2min\""), "e.toml:12:9: prefill.guard: expected a time"},
      {"guard above a minute", inserted(12, "guard = \"61s\""),
       R"(e.toml:12:9: prefill.guard: expected a time like "5ms" from 0s to 60s, got "61s")"},
      {"intra-host rate without a unit", inserted(12, "intra_host_rate = \"900\""),
       "e.toml:12:19: prefill.intra_host_rate: expected a rate"},
      {"zero intra-host rate", inserted(12, "intra_host_rate = \"0gbit\""),
       "e.toml:12:19: prefill.intra_host_rate: expected a rate"},
      {"intra-host rate as a number", inserted(12, "intra_host_rate = 900"),
       R"(e.toml:12:19: prefill.intra_host_rate: expected a rate like "400gbit", got 900)"},
      {"zero batch", inserted(12, "max_batch_tokens = 0"),
       "e.toml:12:20: prefill.max_batch_tokens: expected an integer from 1 to 1000000, got 0"},
      {"rate without a unit", with_line(12, R"(arrivals = { rate = "4", prompt_median = 1469, prompt_p90 = 5194 })"),
       R"(e.toml:12:21: prefill.arrivals.rate: expected a rate greater than 0 and at most 10000/s like "4/s" or "240/min", got "4")"},
      {"zero rate", with_line(12, R"(arrivals = { rate = "0/s", prompt_median = 1469, prompt_p90 = 5194 })"),
       "e.toml:12:21: prefill.arrivals.rate: expected a rate greater than 0"},
      {"rate too high", with_line(12, R"(arrivals = { rate = "20000/s", prompt_median = 1469, prompt_p90 = 5194 })"),
       "e.toml:12:21: prefill.arrivals.rate: expected a rate greater than 0 and at most 10000/s"},
      {"arrivals without a rate", with_line(12, R"(arrivals = { prompt_median = 1469, prompt_p90 = 5194 })"),
       R"(e.toml:12:12: prefill.arrivals: missing rate (e.g. rate = "4/s"))"},
      {"p90 below the median", with_line(12, R"(arrivals = { rate = "4/s", prompt_median = 1469, prompt_p90 = 1000 })"),
       "e.toml:12:63: prefill.arrivals.prompt_p90: 1000 is below prompt_median 1469"},
      {"a median of zero", with_line(12, R"(arrivals = { rate = "4/s", prompt_median = 0, prompt_p90 = 10 })"),
       "e.toml:12:44: prefill.arrivals.prompt_median: expected a number from 1 to 1e+06, got 0"},
      {"arrivals not a table", with_line(12, R"(arrivals = "4/s")"),
       "e.toml:12:12: prefill.arrivals: expected a table"},
      {"zero served layers", with_line(15, "layers = 0"),
       "e.toml:15:10: prefill.model.layers: expected an integer from 1 to 10000, got 0"},
      {"kv heads as text", with_line(17, "kv_heads = \"8\""),
       R"(e.toml:17:12: prefill.model.kv_heads: expected an integer from 1 to 4096, got "8")"},
      {"negative parameters", inserted(19, "parameters = -1"),
       "e.toml:19:14: prefill.model.parameters: expected a number greater than 0"},
      {"table lengths differ", with_line(21, "ms = [48, 158, 308, 642]"),
       "e.toml:21:6: prefill.time.ms: 4 times for 5 token counts; give one time per token count"},
      {"one table point", with_line(20, "tokens = [128]"),
       "e.toml:20:10: prefill.time.tokens: expected a list of 2 to 1000 numbers, got 1 of them"},
      {"tokens not increasing", with_line(20, "tokens = [128, 1024, 1024, 4096, 8192]"),
       "e.toml:20:22: prefill.time.tokens[2]: 1024 after 1024; the list must increase"},
      {"zero tokens", with_line(20, "tokens = [0, 1024, 2048, 4096, 8192]"),
       "e.toml:20:11: prefill.time.tokens[0]: expected a number of tokens from 1 to 1000000, got 0"},
      {"negative time", with_line(21, "ms = [48, -158, 308, 642, 1339]"),
       "e.toml:21:11: prefill.time.ms[1]: expected a time in ms greater than 0 and at most 1000000, got -158"},
      {"time decreasing", with_line(21, "ms = [48, 158, 108, 642, 1339]"),
       "e.toml:21:16: prefill.time.ms[2]: 108 after 158; the list must not decrease"},
      {"time table without ms", with_line(21, ""),
       "e.toml:19:1: prefill.time: missing ms (e.g. tokens = [128, 1024] and ms = [48, 158])"},
      {"time not a list", with_line(21, "ms = 48"),
       "e.toml:21:6: prefill.time.ms: expected a list of 2 to 1000 numbers, got 48"},
      {"no time table with given compute times", first_lines(18),
       "e.toml:11:1: prefill.time: missing: [compute] gives forward_ms and backward_ms"},
      {"served model too large for the GPU", first_lines(13) + kBase.substr(kBase.find("[prefill.time]")),
       "e.toml:11:1: prefill: does not fit in 80 GB per GPU: training 7.6 GB (weights 0.8, gradients 0.8, "
       "optimizer 4.8, activations 1.1) + served weights 128.8 GB + KV of a batch 2.7 GB = 139.1 GB (59.1 GB too "
       "many); use tp >= 2 or a smaller served model or max_batch_tokens"},
      {"zero GPU memory", kBase + "[gpus]\nmemory_gb = 0\n",
       "e.toml:23:13: gpus.memory_gb: expected a number greater than 0 and at most 100000, got 0"},
      {"GPU memory too small", kBase + "[gpus]\nmemory_gb = 8\n", "e.toml:11:1: prefill: does not fit in 8 GB per GPU"},
  };
  return cases;
}

std::filesystem::path source_root() {
  const char* source = std::getenv("WANLAB_SOURCE_DIR");
  return source != nullptr ? std::filesystem::path(source)
                           : std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

// A file under the temporary directory, removed at the end of the test.
struct TempFile {
  explicit TempFile(const std::string& text)
      : path(std::filesystem::temp_directory_path() / ("wanlab-prefill-" + std::to_string(getpid()) + ".csv")) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::filesystem::path path;
};

std::string trace_error(const std::string& text) {
  return harness_test::error_of([&] { parse_request_trace(text, "t.csv"); });
}

double ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

double median(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prefill_section)

BOOST_AUTO_TEST_CASE(the_base_file_parses_with_defaults) {
  Experiment experiment = parse_experiment(kBase, "dir/e.toml");
  const PrefillConfig& prefill = experiment.prefill;
  BOOST_TEST(prefill.enabled);  // a [prefill] section is on unless it says enabled = false
  BOOST_TEST(prefill.requests_path == "dir/trace.csv");
  BOOST_TEST(!prefill.arrivals.has_value());
  BOOST_TEST(prefill.decode_dc == "c");
  BOOST_TEST(prefill.ttft_slo_ns == 3'000'000'000u);
  BOOST_TEST(prefill.guard_ns == 5'000'000u);
  BOOST_TEST(prefill.max_batch_tokens == 8192);
  BOOST_TEST(prefill.intra_host_bps == Fabric{}.nvlink_bps);  // one default for both
  BOOST_TEST(prefill.model.layers == 8);
  BOOST_TEST(prefill.model.bytes_per_value == 2);  // the struct's default
  BOOST_TEST(prefill.time_tokens.size() == 5u);
  BOOST_TEST(prefill.time_ms.back() == 1339.0);
  BOOST_TEST(experiment.where("prefill") == "dir/e.toml:11:1");
  BOOST_TEST(experiment.where("prefill.decode_dc") == "dir/e.toml:13:13");
  BOOST_TEST(experiment.gpu_memory_gb == 80.0);
}

BOOST_AUTO_TEST_CASE(every_key_is_read) {
  Experiment experiment =
      parsed(with_line(12, R"(arrivals = { rate = "240/min", prompt_median = 1469, prompt_p90 = 5194, seed = 3 })") +
             "[gpus]\nmemory_gb = 141.5\nc = 2\n");
  const PrefillConfig& prefill = experiment.prefill;
  BOOST_TEST(prefill.requests_path.empty());
  BOOST_TEST(prefill.arrivals->rate_per_s == 4.0);
  BOOST_TEST(prefill.arrivals->prompt_median == 1469.0);
  BOOST_TEST(prefill.arrivals->prompt_p90 == 5194.0);
  BOOST_TEST(prefill.arrivals->seed == 3u);
  BOOST_TEST(experiment.gpu_memory_gb == 141.5);
  // memory_gb is not a DC.
  BOOST_TEST((experiment.gpus == std::vector<std::pair<std::string, int>>{{"c", 2}}));
  Experiment timed = parsed(
      inserted(12, "ttft_slo = \"2.5s\"\nguard = \"0s\"\nmax_batch_tokens = 4096\nintra_host_rate = \"64gbit\""));
  BOOST_TEST(timed.prefill.intra_host_bps == 64e9);
  BOOST_TEST(timed.prefill.ttft_slo_ns == 2'500'000'000u);
  BOOST_TEST(timed.prefill.guard_ns == 0u);
  BOOST_TEST(timed.prefill.max_batch_tokens == 4096);
}

BOOST_AUTO_TEST_CASE(bad_sections_give_one_line_errors_naming_the_field) {
  harness_test::expect_errors(bad_files(), parse_error);
}

BOOST_AUTO_TEST_CASE(a_section_that_is_off_needs_nothing_but_is_read_strictly) {
  Experiment experiment = parsed(first_lines(10) + "[prefill]\nenabled = false\nguard = \"1ms\"\n");
  BOOST_TEST(!experiment.prefill.enabled);
  BOOST_TEST(experiment.prefill.guard_ns == 1'000'000u);
  BOOST_TEST(parse_error(first_lines(10) + "[prefill]\nenabled = false\ngaurd = \"1ms\"\n") ==
             R"(e.toml:13:1: unknown key "gaurd" in [prefill]; did you mean "guard"?)");
  // Off, the memory is not checked: the default served model does not fit at tp = 1.
  BOOST_TEST(!parsed(first_lines(10) + "[prefill]\nenabled = false\ndecode_dc = \"c\"\nrequests = \"t.csv\"\n")
                  .prefill.enabled);
}

BOOST_AUTO_TEST_CASE(the_time_derives_from_flops_when_compute_does) {
  std::string flops = with_line(10, "mfu = 0.5");
  flops.replace(flops.find("forward_ms = 1"), 14, "peak_tflops = 312");
  Experiment experiment = parsed(flops.substr(0, flops.find("[prefill.time]")));
  BOOST_TEST(experiment.prefill.time_tokens.empty());
  // N = 12 x 8 x 1024^2 = 100.7e6; 2N x 1000 tokens / (312e12 x 0.5) = 1.29 ms.
  BOOST_TEST(ms(prefill_ns(experiment, 1000)) == 2 * 12 * 8 * 1024.0 * 1024 * 1000 / 156e12 * 1e3,
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(prefill_override)

BOOST_AUTO_TEST_CASE(prefill_switches_off_and_on) {
  Experiment experiment = with_table();
  apply_override(experiment, "--prefill", "off");
  BOOST_TEST(!experiment.prefill.enabled);
  apply_override(experiment, "prefill", "on");
  BOOST_TEST(experiment.prefill.enabled);
  BOOST_TEST(harness_test::error_of([&] { apply_override(experiment, "--prefill", "maybe"); }) ==
             R"(--prefill: expected on or off, got "maybe")");
}

BOOST_AUTO_TEST_CASE(prefill_on_needs_a_section_and_names_the_option) {
  Experiment plain = parsed(first_lines(10));
  BOOST_TEST(harness_test::error_of([&] { apply_override(plain, "--prefill", "on"); }) ==
             "--prefill: on needs a [prefill] section in e.toml (requests or arrivals, decode_dc)");
  BOOST_TEST(harness_test::error_of([&] { apply_override(plain, "--prefill", "off"); }) == "(no error)");
  Experiment off = parsed(first_lines(10) + "[prefill]\nenabled = false\ndecode_dc = \"c\"\n");
  BOOST_TEST(harness_test::error_of([&] {
               apply_override(off, "--prefill", "on");
             }).find("--prefill: prefill: give requests (a trace file") == 0);
  // Overrides that change the memory are checked against it too.
  Experiment tight = parsed(kBase + "[gpus]\nmemory_gb = 9\n");
  BOOST_TEST(harness_test::error_of([&] {
               apply_override(tight, "--schedule", "gpipe");
             }).find("e.toml:11:1: prefill: does not fit in 9 GB per GPU") == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(request_traces)

BOOST_AUTO_TEST_CASE(rows_header_comments_and_blank_lines) {
  std::vector<Request> requests = parse_request_trace(
      "# synthetic\narrival_s,prompt_tokens,output_tokens\r\n\n0,1469,13\n 0.25 , 5194 , 0 \n0.25,1,1000000\n",
      "t.csv");
  BOOST_TEST(requests.size() == 3u);
  BOOST_TEST(requests[0].id == 0);
  BOOST_TEST(requests[1].id == 1);
  BOOST_TEST(requests[1].arrival_ns == 250'000'000);
  BOOST_TEST(requests[1].prompt_tokens == 5194);
  BOOST_TEST(requests[1].output_tokens == 0);
  BOOST_TEST(requests[2].output_tokens == 1'000'000);
  BOOST_TEST(parse_request_trace("", "t.csv").empty());
}

BOOST_AUTO_TEST_CASE(malformed_rows_name_file_and_line) {
  BOOST_TEST(trace_error("0,1,1\n1,2\n") ==
             R"(t.csv:2: expected 3 fields (arrival_s,prompt_tokens,output_tokens), got 2: "1,2")");
  BOOST_TEST(trace_error("0,1,1\n# c\n\nx,1,1\n") ==
             R"(t.csv:4: arrival_s: expected a number from 0 to 1000000000, got "x")");
  BOOST_TEST(trace_error("0,1,1\n-1,1,1\n").find("t.csv:2: arrival_s: expected a number from 0 to") == 0);
  BOOST_TEST(trace_error("0,1,1\nnan,1,1\n").find("t.csv:2: arrival_s:") == 0);
  BOOST_TEST(trace_error("arrival_s,prompt_tokens,output_tokens\n0,0,1\n") ==
             R"(t.csv:2: prompt_tokens: expected a whole number from 1 to 1000000, got "0")");
  BOOST_TEST(trace_error("0,1,1\n0,1000001,1\n").find("t.csv:2: prompt_tokens:") == 0);
  BOOST_TEST(trace_error("0,1,1\n0,1.5,1\n").find("t.csv:2: prompt_tokens:") == 0);
  BOOST_TEST(trace_error("0,1,1\n0,1,-1\n").find("t.csv:2: output_tokens:") == 0);
  BOOST_TEST(trace_error("2,1,1\n1.5,1,1\n") ==
             "t.csv:2: arrival_s: 1.5 s is before the previous row's 2 s; arrivals must not decrease");
  // The header only before the rows.
  BOOST_TEST(trace_error("0,1,1\narrival_s,prompt_tokens,output_tokens\n").find("t.csv:2: arrival_s:") == 0);
}

// A `requests` naming any file (/etc/shadow, or a link to it) once put its
// first line into the error: until a line is the header or a request, the
// message says what was expected and shows nothing of the file.
BOOST_AUTO_TEST_CASE(a_file_that_is_no_trace_is_not_shown) {
  const std::string expected =
      R"(not a request trace: expected the header "arrival_s,prompt_tokens,output_tokens" or a row like "0.5,1469,13")";
  BOOST_TEST(trace_error("root:$y$j9T$SECRET:19000:0:99999:7:::\n") == "t.csv:1: " + expected);
  BOOST_TEST(trace_error("# c\n\nSECRET,1,1\n") == "t.csv:3: " + expected);
  BOOST_TEST(trace_error("0,SECRET,1\n") == "t.csv:1: " + expected);
  BOOST_TEST(trace_error("0,1\n") == "t.csv:1: " + expected);
}

BOOST_AUTO_TEST_CASE(a_run_reads_the_trace_up_to_its_horizon) {
  TempFile trace("arrival_s,prompt_tokens,output_tokens\n0.5,100,1\n1.0,200,1\n1.5,300,1\n");
  Experiment experiment = with_table();
  experiment.prefill.requests_path = trace.path.string();
  std::vector<Request> requests = load_requests(experiment, 1'500'000'000);
  BOOST_TEST(requests.size() == 2u);
  BOOST_TEST(requests.back().prompt_tokens == 200);
  BOOST_TEST(load_requests(experiment, 2'000'000'000).size() == 3u);
  experiment.prefill.requests_path = "/nonexistent/trace.csv";
  BOOST_TEST(harness_test::error_of([&] { load_requests(experiment, 1); }) ==
             "e.toml:12:12: prefill.requests: /nonexistent/trace.csv: cannot open: No such file or directory");
}

BOOST_AUTO_TEST_CASE(the_shipped_sample_parses) {
  std::filesystem::path path = source_root() / "scenarios" / "traces" / "code-sample.csv";
  Experiment experiment = with_table();
  experiment.prefill.requests_path = path.string();
  std::vector<Request> requests = load_requests(experiment, 1'000'000'000'000);
  BOOST_TEST(requests.size() >= 200u);
  BOOST_TEST(requests.back().arrival_ns <= 130'000'000'000);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(poisson_arrivals)

Experiment poisson(const std::string& arrivals) { return parsed(with_line(12, "arrivals = " + arrivals)); }

BOOST_AUTO_TEST_CASE(one_seed_gives_the_same_requests) {
  Experiment experiment = poisson(R"({ rate = "4/s", prompt_median = 1469, prompt_p90 = 5194, seed = 3 })");
  std::vector<Request> first = load_requests(experiment, 60'000'000'000);
  std::vector<Request> second = load_requests(experiment, 60'000'000'000);
  BOOST_TEST(first.size() == second.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    BOOST_TEST(first[i].arrival_ns == second[i].arrival_ns);
    BOOST_TEST(first[i].prompt_tokens == second[i].prompt_tokens);
    BOOST_TEST(first[i].id == static_cast<int>(i));
    BOOST_TEST(first[i].output_tokens == 128);
  }
  BOOST_TEST(std::is_sorted(first.begin(), first.end(),
                            [](const Request& a, const Request& b) { return a.arrival_ns < b.arrival_ns; }));
  BOOST_TEST(first.back().arrival_ns < 60'000'000'000);
  // Another seed, other requests; seed 0 takes the experiment's.
  Experiment other = poisson(R"({ rate = "4/s", prompt_median = 1469, prompt_p90 = 5194, seed = 4 })");
  BOOST_TEST(load_requests(other, 60'000'000'000).front().arrival_ns != first.front().arrival_ns);
  Experiment unseeded = poisson(R"({ rate = "4/s", prompt_median = 1469, prompt_p90 = 5194 })");
  unseeded.seed = 3;
  BOOST_TEST(load_requests(unseeded, 60'000'000'000).front().arrival_ns == first.front().arrival_ns);
}

BOOST_AUTO_TEST_CASE(rate_median_and_p90_match_over_many_samples) {
  Experiment experiment = poisson(R"({ rate = "2.57/s", prompt_median = 1469, prompt_p90 = 5194, seed = 11 })");
  const double seconds = 20'000;
  std::vector<Request> requests = load_requests(experiment, static_cast<std::int64_t>(seconds * 1e9));
  // 51,400 expected; a Poisson count's standard deviation is sqrt(51400) = 227.
  BOOST_TEST(static_cast<double>(requests.size()) / seconds == 2.57, boost::test_tools::tolerance(0.02));
  std::vector<int> prompts;
  for (const Request& request : requests) prompts.push_back(request.prompt_tokens);
  BOOST_TEST(median(prompts) == 1469.0, boost::test_tools::tolerance(0.03));
  std::sort(prompts.begin(), prompts.end());
  BOOST_TEST(static_cast<double>(prompts[prompts.size() * 9 / 10]) == 5194.0, boost::test_tools::tolerance(0.03));
}

// "0.0000001/h": the first arrival is 3.6e10 s away, 3.6e19 ns, past int64;
// rounded first, it wrapped negative and a million requests arrived at once.
BOOST_AUTO_TEST_CASE(a_rate_too_slow_to_arrive_in_the_run_brings_no_request) {
  Experiment experiment = poisson(R"({ rate = "0.0000001/h", prompt_median = 1469, prompt_p90 = 5194 })");
  BOOST_TEST(experiment.prefill.arrivals->rate_per_s > 0);
  BOOST_TEST(load_requests(experiment, 3'600'000'000'000).empty());
  // To the end of int64's nanoseconds (292 years): one arrival at the most, not a million.
  BOOST_TEST(load_requests(experiment, std::numeric_limits<std::int64_t>::max()).size() <= 1u);
}

BOOST_AUTO_TEST_CASE(equal_median_and_p90_give_one_length) {
  Experiment experiment = poisson(R"({ rate = "100/s", prompt_median = 512, prompt_p90 = 512 })");
  for (const Request& request : load_requests(experiment, 1'000'000'000)) BOOST_TEST(request.prompt_tokens == 512);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(served_model_arithmetic)

BOOST_AUTO_TEST_CASE(prefill_time_interpolates_the_table) {
  Experiment experiment = with_table();
  BOOST_TEST(ms(prefill_ns(experiment, 1024)) == 158.0);
  BOOST_TEST(ms(prefill_ns(experiment, 1536)) == 233.0);  // halfway between 158 and 308
  BOOST_TEST(ms(prefill_ns(experiment, 128)) == 48.0);
  BOOST_TEST(ms(prefill_ns(experiment, 8192)) == 1339.0);
  BOOST_TEST(ms(prefill_ns(experiment, 3072)) == 475.0);
  // Below the first point: its time (a forward pass reads every weight).
  BOOST_TEST(ms(prefill_ns(experiment, 1)) == 48.0);
  // Beyond the last: the line through the last two, 697 ms per 4096 tokens.
  BOOST_TEST(ms(prefill_ns(experiment, 16384)) == 1339.0 + 2 * 697.0);
  BOOST_TEST(prefill_ns(experiment, 0) == 0u);
}

BOOST_AUTO_TEST_CASE(kv_cache_sizes) {
  // Llama-2-70B: 2 x 80 x 8 x 128 x 2 (REFERENCES.md).
  BOOST_TEST(kv_bytes_per_token(ServedModel{}) == 327'680u);
  Experiment experiment = with_table();
  experiment.prefill.model = ServedModel{};
  BOOST_TEST(kv_message_bytes(experiment, 8192) == 2'684'354'560u);  // 2.68 GB
  experiment.scale = 0.1;
  BOOST_TEST(kv_message_bytes(experiment, 8192) == 268'435'456u);
  experiment.scale = 1e-6;
  BOOST_TEST(kv_message_bytes(experiment, 1) == 1u);  // at least one byte
  BOOST_TEST(kv_bytes_per_token(parsed(kBase).prefill.model) == 2u * 8 * 8 * 128 * 2);
}

BOOST_AUTO_TEST_CASE(memory_at_full_size_per_gpu) {
  // LLaMA-7B's shape in 4 stages of tp 4 under 1F1B (as bubbletea-3dc),
  // serving Llama-2-70B (69e9 parameters).
  Experiment experiment = parsed(
      "name = \"m\"\ntestbed = \"t3.toml\"\nschedule = \"atlas\"\nscale = 0.01\n[model]\nlayers = 32\nhidden = 4096\n"
      "seq_len = 2048\n[parallel]\npp = 4\ndp = 2\ntp = 4\n[compute]\npeak_tflops = 312\nmfu = 0.45\n[prefill]\n"
      "requests = \"t.csv\"\ndecode_dc = \"c\"\n[prefill.model]\nparameters = 69e9\n");
  MemoryEstimate estimate = estimate_memory(experiment);
  double stage = 12.0 * 32 * 4096 * 4096 / 4;  // 1.61e9 parameters
  BOOST_TEST(estimate.training_weights == stage * 2 / 4);
  BOOST_TEST(estimate.training_gradients == stage * 2 / 4);
  BOOST_TEST(estimate.training_optimizer == stage * 12 / 4);
  // 4 microbatches in flight x 8 layers x 34 x s x b x h bytes / tp.
  BOOST_TEST(estimate.training_activations == 4.0 * 8 * 34 * 2048 * 4096 / 4);
  BOOST_TEST(estimate.served_weights == 69e9 * 2 / 4);
  BOOST_TEST(estimate.kv_batch == 8192.0 * 327'680 / 4);
  BOOST_TEST(estimate.capacity == 80e9);
  BOOST_TEST(estimate.total() / 1e9 == 43.9, boost::test_tools::tolerance(0.001));
  // GPipe holds all 8 microbatches; recompute keeps only each layer's input
  // and one layer's whole activations.
  experiment.schedule = Schedule::gpipe;
  BOOST_TEST(estimate_memory(experiment).training_activations == 8.0 * 8 * 34 * 2048 * 4096 / 4);
  experiment.compute.recompute = true;
  BOOST_TEST(estimate_memory(experiment).training_activations == 8.0 * (8 * 2 + 34) * 2048 * 4096 / 4);
}

BOOST_AUTO_TEST_CASE(memory_that_does_not_fit_says_by_how_much) {
  Experiment experiment = parsed(
      "name = \"m\"\ntestbed = \"t3.toml\"\nschedule = \"atlas\"\n[model]\nlayers = 32\nhidden = 4096\n"
      "seq_len = 2048\n[parallel]\npp = 4\ndp = 2\ntp = 4\n[compute]\npeak_tflops = 312\nmfu = 0.45\n[prefill]\n"
      "enabled = false\nrequests = \"t.csv\"\ndecode_dc = \"c\"\n[prefill.model]\nparameters = 69e9\n");
  experiment.parallel.tp = 2;
  experiment.prefill.enabled = true;
  BOOST_TEST(harness_test::error_of([&] { check_memory(experiment); }) ==
             "e.toml:15:1: prefill: does not fit in 80 GB per GPU: training 17.4 GB (weights 1.6, gradients 1.6, "
             "optimizer 9.7, activations 4.6) + served weights 69.0 GB + KV of a batch 1.3 GB = 87.8 GB (7.8 GB too "
             "many); use tp >= 3 or a smaller served model or max_batch_tokens");
  experiment.prefill.enabled = false;
  BOOST_TEST(harness_test::error_of([&] { check_memory(experiment); }) == "(no error)");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(against_the_testbed)

BOOST_AUTO_TEST_CASE(the_decode_dc_must_be_in_the_testbed) {
  Experiment experiment = parsed(with_line(13, "decode_dc = \"europe\""));
  BOOST_TEST(harness_test::error_of([&] { make_plan(experiment, harness_test::three_dcs()); }) ==
             R"(e.toml:13:13: prefill.decode_dc: unknown DC "europe" in testbed t3 (DCs: a, b, c))");
  BOOST_TEST(harness_test::error_of([&] {
               make_plan(parsed(with_line(13, "decode_dc = \"cc\"")), harness_test::three_dcs());
             }).find(R"(prefill.decode_dc: unknown DC "cc" in testbed t3; did you mean "c"?)") != std::string::npos);
  experiment.prefill.enabled = false;
  BOOST_TEST(harness_test::error_of([&] { make_plan(experiment, harness_test::three_dcs()); }) == "(no error)");
  BOOST_TEST(harness_test::error_of([&] { make_plan(with_table(), harness_test::three_dcs()); }) == "(no error)");
}

BOOST_AUTO_TEST_CASE(the_shipped_bubbletea_experiment_plans_fits_and_has_requests) {
  std::filesystem::path path = source_root() / "scenarios" / "experiments" / "bubbletea-3dc.toml";
  Experiment experiment = load_experiment(path.string());
  BOOST_TEST(experiment.prefill.enabled);
  Plan plan = make_plan(experiment, load_testbed(experiment));
  // The decode DC holds no training stage: KV caches leave the training DCs.
  for (const WorkerPlan& worker : plan.workers) BOOST_TEST(worker.worker.dc_name != experiment.prefill.decode_dc);
  MemoryEstimate estimate = estimate_memory(experiment);
  BOOST_TEST_MESSAGE("bubbletea-3dc: " << estimate.total() / 1e9 << " GB of " << estimate.capacity / 1e9
                                       << " GB per GPU");
  BOOST_TEST(estimate.total() <= estimate.capacity);
  BOOST_TEST(!load_requests(experiment, 10'000'000'000).empty());
}

BOOST_AUTO_TEST_SUITE_END()
