// Strict parsing of numbers given as text (command lines, environment), and
// quoting of untrusted text in error messages. The lowest library: it knows no
// other part of wanlab, and every part uses it for the same job.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace wanlab::base {

/// A text that is not the number asked for. what() reads "expected a whole
/// number from 1 to 65535, got "x"": callers prefix the option or field.
class ParseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// `text` for an error message: in double quotes, control and non-ASCII bytes
/// as \xNN, and cut to `max_shown` characters with "..." so that a 50 MB input
/// never becomes a 50 MB message.
std::string quoted(std::string_view text, std::size_t max_shown = 64);
/// quoted() without the quotes: for text shown where quotes would be noise (a
/// table's cells, a list of names).
std::string escaped(std::string_view text, std::size_t max_shown = 64);

namespace detail {
bool parse_whole(std::string_view text, std::int64_t& value);
bool parse_whole(std::string_view text, std::uint64_t& value);
[[noreturn]] void throw_range(std::string_view text, long double min, long double max, bool whole);
}  // namespace detail

/// The whole of `text` as an integer in [min, max]: decimal digits with an
/// optional leading '-', nothing before or after ("1abc", " 1", "+1", "0x10"
/// and "" are refused). Throws ParseError.
template <std::integral T>
T parse_integer(std::string_view text, T min, T max) {
  if constexpr (std::is_signed_v<T>) {
    std::int64_t value = 0;
    if (!detail::parse_whole(text, value) || value < static_cast<std::int64_t>(min) ||
        value > static_cast<std::int64_t>(max))
      detail::throw_range(text, static_cast<long double>(min), static_cast<long double>(max), true);
    return static_cast<T>(value);
  } else {
    std::uint64_t value = 0;
    if (!detail::parse_whole(text, value) || value < static_cast<std::uint64_t>(min) ||
        value > static_cast<std::uint64_t>(max))
      detail::throw_range(text, static_cast<long double>(min), static_cast<long double>(max), true);
    return static_cast<T>(value);
  }
}

/// The whole of `text` as a finite decimal number in [min, max] ("0.5", "2",
/// "1e-3"); "inf", "nan", "1abc", "" and hexadecimal are refused. Throws ParseError.
double parse_decimal(std::string_view text, double min, double max);

}  // namespace wanlab::base
