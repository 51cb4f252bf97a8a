// The experiment fuzzer's corpus (tests/data/experiment-corpus) replayed
// through parse_experiment in the normal build.
#include "parser_corpus.hpp"
#include "wanlab/harness/experiment/experiment.hpp"

namespace hs = wanlab::harness;

BOOST_AUTO_TEST_CASE(every_corpus_input_parses_or_gives_one_line) {
  const auto counts = parser_corpus::replay<hs::ExperimentError>(
      parser_corpus::source_dir() / "tests/data/experiment-corpus",
      [](const std::string& text) { hs::parse_experiment(text, "fuzz.toml"); });
  // The hand-written seeds parse; the fuzzers' findings are refused.
  BOOST_TEST(counts.parsed >= 3);
  BOOST_TEST(counts.refused >= 2);
}
