// tc-style units: every accepted form, every rejected form, and formatting that
// reads back exactly.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "wanlab/emulator/units.hpp"

namespace units = wanlab::emulator::units;

namespace {

struct Accepted {
  const char* text;
  std::uint64_t value;
};

struct Rejected {
  const char* text;
  const char* message_part;  // a piece the error message must contain
};

std::string error_of(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

void check_accepted(const std::vector<Accepted>& cases, const std::function<std::uint64_t(std::string_view)>& parse) {
  for (const Accepted& item : cases) {
    BOOST_TEST_CONTEXT("parsing \"" << item.text << "\"") { BOOST_TEST(parse(item.text) == item.value); }
  }
}

template <typename Parse>
void check_rejected(const std::vector<Rejected>& cases, const char* expected, Parse parse) {
  for (const Rejected& item : cases) {
    std::string message = error_of([&] { parse(item.text); });
    BOOST_TEST_CONTEXT("parsing \"" << item.text << "\" gave: " << message) {
      BOOST_TEST(message.find(expected) != std::string::npos);
      BOOST_TEST(message.find(item.message_part) != std::string::npos);
      BOOST_TEST(message.find('\n') == std::string::npos);
    }
  }
}

// Deterministic spread of values across the 64-bit range.
std::vector<std::uint64_t> sample_values() {
  std::vector<std::uint64_t> values{0,
                                    1,
                                    7,
                                    999,
                                    1000,
                                    1024,
                                    1536,
                                    1'000'000,
                                    1'500'000,
                                    1'234'567,
                                    35'000'000,
                                    4 * 1024 * 1024,
                                    100'000'000,
                                    8'000'000'000ULL,
                                    std::numeric_limits<std::uint64_t>::max()};
  std::uint64_t state = 0x243f6a8885a308d3ULL;
  for (int i = 0; i < 2000; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    values.push_back(state >> (i % 64));
  }
  return values;
}

}  // namespace

BOOST_AUTO_TEST_CASE(rates_in_every_unit) {
  check_accepted({{"1bit", 1},
                  {"100kbit", 100'000},
                  {"500mbit", 500'000'000},
                  {"1gbit", 1'000'000'000},
                  {"1.5gbit", 1'500'000'000},
                  {"2tbit", 2'000'000'000'000},
                  {"1kibit", 1024},
                  {"1mibit", 1024 * 1024},
                  {"1gibit", 1024ULL * 1024 * 1024},
                  {"1tibit", 1024ULL * 1024 * 1024 * 1024},
                  {"1bps", 8},
                  {"1kbps", 8'000},
                  {"1mbps", 8'000'000},
                  {"1gbps", 8'000'000'000},
                  {"1tbps", 8'000'000'000'000},
                  {"100MBit", 100'000'000},
                  {".5mbit", 500'000},
                  {" 100mbit ", 100'000'000},
                  {"100 mbit", 100'000'000},
                  {"0.5bit", 1},
                  {"18446744073709551615bit", std::numeric_limits<std::uint64_t>::max()}},
                 units::parse_rate);
}

BOOST_AUTO_TEST_CASE(bad_rates) {
  check_rejected({{"", "got \"\""},
                  {"fast", "got \"fast\""},
                  {"500", "missing unit"},
                  {"500mbits", "unknown unit \"mbits\""},
                  {"1e6bit", "unknown unit \"e6bit\""},
                  {"-5mbit", "negative"},
                  {"0mbit", "greater than 0"},
                  {"0.4bit", "greater than 0"},
                  {"nan", "got \"nan\""},
                  {"inf", "got \"inf\""},
                  {"18446744073709551616bit", "too many digits"},
                  {"9999999999999999999tbit", "too large"},
                  {"1.2.3mbit", "unknown unit"}},
                 R"(expected a rate like "100mbit")", units::parse_rate);
}

BOOST_AUTO_TEST_CASE(times_in_every_unit) {
  check_accepted({{"1s", 1'000'000'000},
                  {"2sec", 2'000'000'000},
                  {"3secs", 3'000'000'000},
                  {"35ms", 35'000'000},
                  {"1msec", 1'000'000},
                  {"2msecs", 2'000'000},
                  {"50us", 50'000},
                  {"1usec", 1'000},
                  {"2usecs", 2'000},
                  {"7ns", 7},
                  {"1nsec", 1},
                  {"2nsecs", 2},
                  {"1.5ms", 1'500'000},
                  {"0ms", 0},
                  {"0.4ns", 0},
                  {"0.5ns", 1},
                  {"10S", 10'000'000'000}},
                 units::parse_time);
}

BOOST_AUTO_TEST_CASE(bad_times) {
  check_rejected({{"35", "missing unit"},
                  {"35m", "unknown unit \"m\""},
                  {"35mins", "unknown unit \"mins\""},
                  {"-1ms", "negative"},
                  {"ms", "got \"ms\""},
                  {"99999999999s", "too large"}},
                 R"(expected a time like "35ms")", units::parse_time);
}

// Times are added to signed 64-bit nanosecond clocks: one that would wrap to
// the past is refused ([[event]] at = "18446744073s" applied at once).
BOOST_AUTO_TEST_CASE(times_that_would_wrap_a_clock_are_refused) {
  check_rejected({{"18446744073s", "too large"}, {"10000000000s", "too large"}, {"9223372036.854775808s", "too large"}},
                 R"(expected a time like "35ms")", units::parse_time);
  BOOST_TEST(units::parse_time("9223372036s") == 9'223'372'036'000'000'000ull);
  BOOST_TEST(units::parse_time("9223372036854775807ns") == units::kMaxTimeNs);
}

BOOST_AUTO_TEST_CASE(sizes_in_every_unit) {
  check_accepted({{"1b", 1},
                  {"1k", 1024},
                  {"1kb", 1024},
                  {"4mb", 4 * 1024 * 1024},
                  {"1m", 1024 * 1024},
                  {"1g", 1024ULL * 1024 * 1024},
                  {"1gb", 1024ULL * 1024 * 1024},
                  {"8kbit", 1024},
                  {"1mbit", 1024 * 1024 / 8},
                  {"1gbit", 1024ULL * 1024 * 1024 / 8},
                  {"1.5kb", 1536},
                  {"0.9765625kb", 1000},
                  {"6MB", 6 * 1024 * 1024}},
                 units::parse_size);
}

BOOST_AUTO_TEST_CASE(bad_sizes) {
  check_rejected(
      {{"4", "missing unit"}, {"4mib", "unknown unit \"mib\""}, {"-4mb", "negative"}, {"big", "got \"big\""}},
      R"(expected a size like "4mb")", units::parse_size);
}

BOOST_AUTO_TEST_CASE(percentages) {
  BOOST_TEST(units::parse_percent("0%") == 0.0);
  BOOST_TEST(units::parse_percent("0.1%") == 0.001);
  BOOST_TEST(units::parse_percent("50%") == 0.5);
  BOOST_TEST(units::parse_percent("100%") == 1.0);
  BOOST_TEST(units::parse_percent("100.000%") == 1.0);
  BOOST_TEST(units::parse_percent("0.0001%") == 0.000001);
}

BOOST_AUTO_TEST_CASE(bad_percentages) {
  check_rejected({{"0.1", "missing %"},
                  {"1 percent", "the only unit is %"},
                  {"101%", "at most 100%"},
                  {"100.0001%", "at most 100%"},
                  {"-1%", "negative"},
                  {"nan%", "got \"nan%\""}},
                 R"(expected a percentage like "0.1%")", units::parse_percent);
}

BOOST_AUTO_TEST_CASE(formatting_picks_the_shortest_exact_form) {
  BOOST_TEST(units::format_rate(500'000'000) == "500mbit");
  BOOST_TEST(units::format_rate(1'500'000) == "1.5mbit");
  BOOST_TEST(units::format_rate(1'234'567) == "1234567bit");
  BOOST_TEST(units::format_rate(1'000) == "1kbit");
  BOOST_TEST(units::format_rate(2'000'000'000'000) == "2tbit");
  BOOST_TEST(units::format_rate(0) == "0bit");
  BOOST_TEST(units::format_time(35'000'000) == "35ms");
  BOOST_TEST(units::format_time(50'000) == "50us");
  BOOST_TEST(units::format_time(1'500'000) == "1.5ms");
  BOOST_TEST(units::format_time(90'000'000'000) == "90s");
  BOOST_TEST(units::format_time(7) == "7ns");
  BOOST_TEST(units::format_time(0) == "0s");
  BOOST_TEST(units::format_size(4 * 1024 * 1024) == "4mb");
  BOOST_TEST(units::format_size(1536) == "1536b");  // a whole number wins a tie
  BOOST_TEST(units::format_size(1536 * 1024) == "1.5mb");
  BOOST_TEST(units::format_size(1000) == "1000b");
  BOOST_TEST(units::format_size(0) == "0b");
  BOOST_TEST(units::format_percent(0.001) == "0.1%");
  BOOST_TEST(units::format_percent(0.0) == "0%");
  BOOST_TEST(units::format_percent(1.0) == "100%");
  BOOST_TEST(units::format_percent(0.015) == "1.5%");
}

BOOST_AUTO_TEST_CASE(formatting_reads_back_exactly) {
  for (std::uint64_t value : sample_values()) {
    BOOST_TEST_CONTEXT("value " << value) {
      if (value <= units::kMaxTimeNs) BOOST_TEST(units::parse_time(units::format_time(value)) == value);
      BOOST_TEST(units::parse_size(units::format_size(value)) == value);
      if (value != 0) BOOST_TEST(units::parse_rate(units::format_rate(value)) == value);
    }
  }
  for (double fraction : {0.0, 1e-9, 0.001, 0.0123, 1.0 / 3, 0.25, 0.999999, 1.0}) {
    BOOST_TEST_CONTEXT("fraction " << fraction) {
      BOOST_TEST(units::parse_percent(units::format_percent(fraction)) == fraction);
    }
  }
}
