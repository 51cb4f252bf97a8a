// releaser.toml, the releaser's counters between the daemon and `wanlab
// stats`: written and read by one pair of functions, strictly.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "support/scratch.hpp"
#include "wanlab/emulator/releaser.hpp"

namespace em = wanlab::emulator;
namespace fs = std::filesystem;

namespace {

using wanlab::test::Scratch;

// The error reading `text` gives, "" if none.
std::string error_reading(const Scratch& scratch, const std::string& text) {
  try {
    em::read_releaser_stats(scratch.file("releaser.toml", text));
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(stats_written_are_read_back) {
  Scratch scratch("releaser-stats");
  const std::string path = (scratch.dir / "releaser.toml").string();
  em::ReleaserStats stats{{123456789, 250'000, 40, 6, 5, 3, 2, 1}, 17, 9'000'000'000'000ull, 7, 8, {}};
  stats.pairs = {{{1000, 250'000, 40, 6, 5, 3, 2, 1}, "east", "west"}, {{7, 90'000, 2, 0, 0, 0, 0, 0}, "west", "east"}};
  em::write_releaser_stats(path, stats);
  BOOST_TEST((em::read_releaser_stats(path) == stats));
  BOOST_TEST((em::read_releaser_stats_if_present(path) == stats));
  BOOST_TEST(!em::read_releaser_stats_if_present((scratch.dir / "absent.toml").string()).has_value());
  BOOST_TEST(em::releaser_stats_path("tb").ends_with("/tb/releaser.toml"));
}

// /proc/net/netfilter/nfnetlink_queue: a line per bound queue; the drops are
// its sixth and seventh fields.
BOOST_AUTO_TEST_CASE(the_kernel_counts_of_a_queue_are_read_from_its_line) {
  const std::string proc =
      "    0  12345     0 2 65531     0     0       14  1\n"
      "30002  4242    17 1     0   123    45   999999  1\n";
  const auto drops = em::nfqueue_drops(proc, 30002);
  BOOST_TEST_REQUIRE(drops.has_value());
  BOOST_TEST(drops->first == 123u);
  BOOST_TEST(drops->second == 45u);
  BOOST_TEST((em::nfqueue_drops(proc, 0) == std::pair<std::uint64_t, std::uint64_t>{0, 0}));
  BOOST_TEST(!em::nfqueue_drops(proc, 7).has_value());
  BOOST_TEST(!em::nfqueue_drops("", 0).has_value());
}

// Only the pairs that had a verdict are written.
BOOST_AUTO_TEST_CASE(pairs_without_verdicts_are_left_out) {
  em::ReleaserStats stats;
  stats.pairs = {{{}, "east", "east"}, {{3, 20'000, 1, 0, 0, 0, 0, 0}, "east", "west"}};
  const std::string text = em::format_releaser_stats(stats);
  BOOST_TEST(text.find("from = 'east'\nto = 'west'") != std::string::npos, text);
  BOOST_TEST(text.find("to = 'east'") == std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_corrupt_file_is_one_line_naming_the_key) {
  Scratch scratch("releaser-stats");
  const std::string good = em::format_releaser_stats({});
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      {"packets = 1\n", "late_max_ns: missing key"},
      {good + "extra = 1\n", "unknown key \"extra\""},
      {good.substr(good.find('\n') + 1) + "packets = -1\n", "packets: expected an integer from 0"},
      {good.substr(good.find('\n') + 1) + "packets = \"many\"\n", "packets: expected an integer from 0"},
      {"packets = = 1\n", "releaser.toml:1:"},
      {good + "[[pair]]\nfrom = \"a\"\nto = \"b\"\npackets = 1\n", "late_max_ns: missing key"},
      {good + "[[pair]]\nfrom = \"a\"\nto = \"b\"\nwho = 1\n", "unknown key \"who\""},
      {good + "pair = 3\n", "pair: expected an array"},
  };
  for (const auto& c : cases) {
    const std::string error = error_reading(scratch, c.text);
    BOOST_TEST_CONTEXT(c.text) {
      BOOST_TEST(error.find(c.message) != std::string::npos, error);
      BOOST_TEST(error.starts_with((scratch.dir / "releaser.toml").string() + ":"), error);
      BOOST_TEST(error.find('\n') == std::string::npos, error);
    }
  }
}
