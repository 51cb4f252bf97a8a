// Replays the frame decoder fuzzer's corpus (tests/data/transport-corpus)
// through the same entry point the fuzzer uses. Named seeds have known
// outcomes; the fuzzer-found inputs must decode without breaking the
// decoder's invariants (which throw std::logic_error) and deterministically.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "wanlab/transport/fuzz.hpp"

namespace fs = std::filesystem;
namespace fuzz = wanlab::transport::fuzz;

namespace {

fs::path corpus_dir() {
  if (const char* source = std::getenv("WANLAB_SOURCE_DIR")) return fs::path(source) / "tests/data/transport-corpus";
  return fs::path(__FILE__).parent_path().parent_path() / "data/transport-corpus";
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Expected {
  std::uint64_t messages;
  std::uint64_t bytes;
};

// From transport/fuzz/make_corpus.cpp: sizes 0, 1, 1023, 1024, 1025, 3079 with
// a 1024-byte chunk; one 5120-byte message; no messages.
const std::map<std::string, Expected> kValid{
    {"valid-one-connection", {6, 6152}}, {"valid-three-connections", {6, 6152}}, {"valid-checksums", {6, 6152}},
    {"valid-out-of-order", {1, 5120}},   {"valid-no-messages", {0, 0}},
};

const std::map<std::string, std::string> kBad{
    {"bad-no-goodbye", "without a goodbye"},
    {"bad-duplicate-chunk", "message 5: duplicate chunk at offset 0"},
    {"bad-repeated-message", "message 3 was already delivered"},
    {"bad-corrupt-payload", "checksum"},
    {"bad-header-magic", "bad magic"},
    {"bad-truncated", "in the middle of message 5"},
    {"bad-goodbye-count", "another connection's goodbye said 6"},
    {"bad-huge-size", "above the limit"},
    {"bad-hello-version", "protocol version 7 is not supported"},
};

}  // namespace

BOOST_AUTO_TEST_CASE(corpus_is_present) {
  const auto dir = corpus_dir();
  BOOST_REQUIRE_MESSAGE(fs::is_directory(dir), dir << " is missing");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  BOOST_CHECK_GE(files, kValid.size() + kBad.size() + 10);
  for (const auto& [name, expected] : kValid) BOOST_CHECK_MESSAGE(fs::exists(dir / name), name << " missing");
  for (const auto& [name, expected] : kBad) BOOST_CHECK_MESSAGE(fs::exists(dir / name), name << " missing");
}

BOOST_AUTO_TEST_CASE(valid_seeds_decode_completely) {
  for (const auto& [name, expected] : kValid) {
    BOOST_TEST_CONTEXT(name) {
      const auto outcome = fuzz::decode_fuzz_input(read_file(corpus_dir() / name));
      BOOST_CHECK_MESSAGE(outcome.error.empty(), outcome.error);
      BOOST_CHECK(outcome.finished);
      BOOST_CHECK_EQUAL(outcome.messages, expected.messages);
      BOOST_CHECK_EQUAL(outcome.bytes, expected.bytes);
    }
  }
  // The same messages over 1, 2 or 3 connections assemble to the same bytes.
  const auto one = fuzz::decode_fuzz_input(read_file(corpus_dir() / "valid-one-connection"));
  const auto three = fuzz::decode_fuzz_input(read_file(corpus_dir() / "valid-three-connections"));
  const auto checked = fuzz::decode_fuzz_input(read_file(corpus_dir() / "valid-checksums"));
  BOOST_CHECK_EQUAL(one.content_hash, three.content_hash);
  BOOST_CHECK_EQUAL(one.content_hash, checked.content_hash);
}

BOOST_AUTO_TEST_CASE(bad_seeds_are_rejected_with_their_reason) {
  for (const auto& [name, part] : kBad) {
    BOOST_TEST_CONTEXT(name) {
      const auto outcome = fuzz::decode_fuzz_input(read_file(corpus_dir() / name));
      BOOST_CHECK_MESSAGE(outcome.error.find(part) != std::string::npos, "error: '" << outcome.error << "'");
      BOOST_CHECK(!outcome.finished);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_corpus_input_decodes_safely_and_deterministically) {
  std::size_t clean = 0, rejected = 0;
  for (const auto& entry : fs::directory_iterator(corpus_dir())) {
    BOOST_TEST_CONTEXT(entry.path().filename().string()) {
      const auto input = read_file(entry.path());
      const auto first = fuzz::decode_fuzz_input(input);  // a std::logic_error here fails the test
      const auto again = fuzz::decode_fuzz_input(input);
      BOOST_CHECK_EQUAL(first.error, again.error);
      BOOST_CHECK_EQUAL(first.messages, again.messages);
      BOOST_CHECK_EQUAL(first.content_hash, again.content_hash);
      BOOST_CHECK_LE(first.bytes, input.size());
      // Without an error, every connection said goodbye.
      BOOST_CHECK(first.error.empty() == first.finished);
      (first.error.empty() ? clean : rejected) += 1;
    }
  }
  BOOST_TEST_MESSAGE(clean << " inputs decoded cleanly, " << rejected << " rejected");
  BOOST_CHECK_GT(clean, 0u);
  BOOST_CHECK_GT(rejected, 0u);
}
