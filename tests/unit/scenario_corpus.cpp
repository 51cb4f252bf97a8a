// The scenario fuzzer's corpus (tests/data/scenario-corpus) replayed through
// parse_scenario in the normal build.
#include "parser_corpus.hpp"
#include "wanlab/emulator/scenario.hpp"

namespace em = wanlab::emulator;

BOOST_AUTO_TEST_CASE(every_corpus_input_parses_or_gives_one_line) {
  const auto counts =
      parser_corpus::replay<em::ScenarioError>(parser_corpus::source_dir() / "tests/data/scenario-corpus",
                                               [](const std::string& text) { em::parse_scenario(text, "fuzz.toml"); });
  // The hand-written seeds parse; the fuzzers' findings are refused.
  BOOST_TEST(counts.parsed >= 3);
  BOOST_TEST(counts.refused >= 3);
}
