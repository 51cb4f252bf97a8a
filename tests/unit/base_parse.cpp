// The one strict parser for numbers typed on command lines and in the
// environment, and the quoting of untrusted text in messages.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "wanlab/base/parse.hpp"

namespace b = wanlab::base;

BOOST_AUTO_TEST_CASE(integers_take_the_whole_text_or_nothing) {
  BOOST_TEST(b::parse_integer<int>("42", 0, 100) == 42);
  BOOST_TEST(b::parse_integer<int>("-3", -5, 5) == -3);
  BOOST_TEST(b::parse_integer<std::uint16_t>("65535", 0, 65535) == 65535);
  for (const char* bad : {"", "x", "1abc", " 1", "1 ", "+1", "0x10", "1.5", "1e3", "--1", "-"})
    BOOST_CHECK_THROW(b::parse_integer<int>(bad, -100, 100), b::ParseError);
  BOOST_CHECK_THROW(b::parse_integer<unsigned>("-1", 0, 10), b::ParseError);
}

BOOST_AUTO_TEST_CASE(integers_out_of_range_or_overflowing_are_refused) {
  BOOST_CHECK_THROW(b::parse_integer<int>("101", 0, 100), b::ParseError);
  BOOST_CHECK_THROW(b::parse_integer<int>("-1", 0, 100), b::ParseError);
  BOOST_CHECK_THROW(
      b::parse_integer<std::uint64_t>("18446744073709551616", 0, std::numeric_limits<std::uint64_t>::max()),
      b::ParseError);
  BOOST_CHECK_THROW(b::parse_integer<int>("99999999999", 0, std::numeric_limits<int>::max()), b::ParseError);
  try {
    b::parse_integer<int>("70000", 0, 65535);
    BOOST_FAIL("accepted 70000");
  } catch (const b::ParseError& error) {
    BOOST_TEST(std::string(error.what()) == R"(expected a whole number from 0 to 65535, got "70000")");
  }
}

BOOST_AUTO_TEST_CASE(decimals_are_finite_and_whole) {
  BOOST_TEST(b::parse_decimal("0.5", 0, 10) == 0.5);
  BOOST_TEST(b::parse_decimal("2", 0, 10) == 2.0);
  BOOST_TEST(b::parse_decimal("1e-3", 0, 10) == 1e-3);
  for (const char* bad : {"", "x", "1abc", "inf", "-inf", "nan", "INF", " 1", "1 ", "+1", "0x1p3", "1e400", "."})
    BOOST_CHECK_THROW(b::parse_decimal(bad, -1e300, 1e300), b::ParseError);
  BOOST_CHECK_THROW(b::parse_decimal("11", 0, 10), b::ParseError);
  BOOST_CHECK_THROW(b::parse_decimal("-0.1", 0, 10), b::ParseError);
}

BOOST_AUTO_TEST_CASE(quoted_text_is_bounded_and_printable) {
  BOOST_TEST(b::quoted("abc") == R"("abc")");
  BOOST_TEST(b::quoted("a\"b") == R"("a\"b")");
  BOOST_TEST(b::quoted("a\nb\x01") == R"("a\x0ab\x01")");
  const std::string huge(50'000'000, 'n');
  const std::string shown = b::quoted(huge);
  BOOST_TEST(shown.size() <= 80u);
  BOOST_TEST(shown.ends_with("...\""));
  // The same without the quotes, for a table's cells.
  BOOST_TEST(b::escaped("\x1b[2Jred\nline") == R"(\x1b[2Jred\x0aline)");
  BOOST_TEST(b::escaped(huge, 8) == "nnnnnnnn...");
}
