// card.yaml (card.hpp): the card of a simulated run holds the model, the
// parallelism, the schedule, the testbed with its WAN matrix, the software and
// the command, as YAML whose strings are quoted whatever they hold.
#include <boost/test/unit_test.hpp>

#include <regex>
#include <sstream>

#include "harness_support.hpp"
#include "wanlab/harness/report/card.hpp"

namespace hs = wanlab::harness;
using harness_test::count_substring;

namespace {

std::string card_of(const hs::Invocation& invocation) {
  const harness_test::SimulatedRun run = harness_test::pp_across_dc_run();
  return hs::workload_card(run.record, run.scenario, invocation);
}

bool has(const std::string& card, const std::string& lines) { return card.find(lines) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(the_card_names_model_parallelism_schedule_and_command) {
  const std::string card = card_of({"wanlab train x.toml --simulate --out r", "/home/u", ""});
  BOOST_TEST(card.starts_with("# wanlab workload card"));
  BOOST_TEST(
      has(card,
          "\ncard_version: 1\nname: \"x\"\nrun:\n  kind: \"simulated\"\n  runtime: \"simulator\"\n  iterations: 2\n"),
      card);
  BOOST_TEST(has(card, "  command: \"wanlab train x.toml --simulate --out r\"\n  working_directory: \"/home/u\"\n"),
             card);
  BOOST_TEST(!has(card, "sweep_point"));
  BOOST_TEST(has(card, "model:\n  layers: 64\n  hidden: 1024\n  seq_len: 1024\n"), card);
  BOOST_TEST(has(card, "parallelism:\n  pp: 4\n  dp: 2\n  tp: 1\n  gpus: 8\n"), card);
  BOOST_TEST(has(card,
                 "schedule:\n  name: \"1f1b\"\n  placement: \"pp-across-dc\"\n  stage_dcs: [\"a\", \"b\", \"c\", "
                 "\"a\"]\n  streams: 2\n"),
             card);
  BOOST_TEST(has(card, "  forward_ms: 5\n  backward_ms: 10\n"), card);
  BOOST_TEST(has(card, "prefill:\n  enabled: false\n"), card);
}

BOOST_AUTO_TEST_CASE(the_testbed_carries_every_directed_pair_of_its_wan_matrix) {
  const std::string card = card_of({"wanlab train x.toml", "/", ""});
  BOOST_TEST(has(card, "testbed:\n  name: \"t3\"\n"), card);
  BOOST_TEST(has(card, "  dcs:\n    - name: \"a\"\n      hosts: 2\n"), card);
  BOOST_TEST(count_substring(card, "    - src: ") == 9);  // 3 x 3, inside each DC too
  BOOST_TEST(
      has(card,
          "    - src: \"a\"\n      dst: \"c\"\n      delay_ms: 40\n      jitter_ms: 0\n      rate_bps: 1000000000\n"),
      card);
  BOOST_TEST(has(card, "    - src: \"c\"\n      dst: \"b\"\n      delay_ms: 60\n"), card);
  BOOST_TEST(has(card,
                 "    - src: \"b\"\n      dst: \"b\"\n      delay_ms: 0.05\n      jitter_ms: 0\n      rate_bps: "
                 "10000000000\n"),
             card);
}

BOOST_AUTO_TEST_CASE(software_versions_are_on_the_card) {
  const std::string card = card_of({"wanlab train x.toml", "/", "2 of 6: streams = 4"});
  BOOST_TEST(has(card, "  sweep_point: \"2 of 6: streams = 4\"\n"), card);
  const std::regex commit(R"(\n  git_commit: (null|"[0-9a-f]{7,40}(-dirty)?")\n)");
  BOOST_TEST(std::regex_search(card, commit), card);
  BOOST_TEST(std::regex_search(card, std::regex(R"(\n  compiler: "(gcc|clang) [0-9])")), card);
  BOOST_TEST(has(card, "\n  kernel: \"Linux "), card);
  BOOST_TEST(has(card, "\n  container_runtime: \"simulator\"\n"), card);
}

// Every line a comment, "key:", "key: value" or "- key: value", indented by
// twos; strings double-quoted with JSON's escapes, so a command holding
// quotes, a newline or a colon stays on its line.
BOOST_AUTO_TEST_CASE(strings_are_quoted_and_every_line_is_block_yaml) {
  const std::string card = card_of({"wanlab train \"a b\".toml --x 'y: z'\nrm -rf \\ \x01", "/tmp/dir: odd", ""});
  BOOST_TEST(has(card, "  command: \"wanlab train \\\"a b\\\".toml --x 'y: z'\\nrm -rf \\\\ \\u0001\"\n"), card);
  BOOST_TEST(has(card, "  working_directory: \"/tmp/dir: odd\"\n"), card);
  const std::regex line(R"(( *)(# .*|(- )?[a-z_]+:( (-?[0-9.e+]+|true|false|null|"([^"\\]|\\.)*"|\[.*\]))?))");
  std::istringstream lines(card);
  int count = 0;
  for (std::string text; std::getline(lines, text); ++count) {
    std::smatch match;
    BOOST_TEST(std::regex_match(text, match, line), text);
    BOOST_TEST(match[1].length() % 2 == 0, text);
  }
  BOOST_TEST(count > 60);
}
