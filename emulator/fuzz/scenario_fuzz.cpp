// libFuzzer target for scenario files: the bytes as the text of a scenario,
// through parse_scenario (what load_scenario, and so every command, uses).
// Parsed, or a ScenarioError of one line; nothing else (base/fuzz/parser_fuzz.hpp).
//   build-fuzz/emulator/scenario_fuzzer NEW_DIR tests/data/scenario-corpus scenarios -dict=tests/data/scenario.dict
#include "parser_fuzz.hpp"
#include "wanlab/emulator/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return wanlab::fuzz::check_parser<wanlab::emulator::ScenarioError>(
      data, size, [](std::string_view text) { wanlab::emulator::parse_scenario(text, "fuzz.toml"); });
}
