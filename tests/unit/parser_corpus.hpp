// Replays a file-parser fuzzer's corpus (tests/data/<name>-corpus, with the
// inputs the fuzzers found) in the normal build, against Debian's toml++: each
// input parses, or is refused with the parser's error type and a one-line
// message (base::one_line_problem), as the fuzzers require.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "wanlab/base/one_line.hpp"

namespace parser_corpus {

inline std::filesystem::path source_dir() {
  const char* dir = std::getenv("WANLAB_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(dir != nullptr, "WANLAB_SOURCE_DIR is not set (run through ctest)");
  return dir;
}

struct Counts {
  int parsed = 0;
  int refused = 0;
};

// Every file in `dir`; `parse(text)` must return or throw Error. Another
// exception fails the test case through Boost.Test.
template <typename Error, typename Parse>
Counts replay(const std::filesystem::path& dir, Parse parse) {
  Counts counts;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    BOOST_TEST_CONTEXT(entry.path().filename().string()) {
      try {
        parse(text);
        ++counts.parsed;
      } catch (const Error& error) {
        BOOST_TEST(wanlab::base::one_line_problem(error.what()) == "", error.what());
        ++counts.refused;
      }
    }
  }
  return counts;
}

}  // namespace parser_corpus
