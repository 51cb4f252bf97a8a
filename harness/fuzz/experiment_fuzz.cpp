// libFuzzer target for experiment files: the bytes as the text of an
// experiment, through parse_experiment (what load_experiment, and so
// `wanlab train`, uses). Parsed, or an ExperimentError of one line; nothing
// else (base/fuzz/parser_fuzz.hpp).
//   build-fuzz/harness/experiment_fuzzer NEW_DIR tests/data/experiment-corpus scenarios/experiments
//   -dict=tests/data/experiment.dict
#include "parser_fuzz.hpp"
#include "wanlab/harness/experiment/experiment.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return wanlab::fuzz::check_parser<wanlab::harness::ExperimentError>(
      data, size, [](std::string_view text) { wanlab::harness::parse_experiment(text, "fuzz.toml"); });
}
