#include "wanlab/base/parse.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace wanlab::base {

std::string quoted(std::string_view text, std::size_t max_shown) { return "\"" + escaped(text, max_shown) + "\""; }

std::string escaped(std::string_view text, std::size_t max_shown) {
  std::string out;
  std::size_t shown = 0;
  for (const char c : text) {
    if (shown == max_shown) {
      out += "...";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
    ++shown;
  }
  return out;
}

namespace detail {
namespace {

// Digits only (and a '-' for signed), so that from_chars' own leniency about
// what follows a number never shows: the whole text or nothing.
template <typename T>
bool parse_whole_impl(std::string_view text, T& value) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  return error == std::errc() && end == text.data() + text.size();
}

std::string bound(long double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e18L) return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{:g}", static_cast<double>(value));
}

}  // namespace

bool parse_whole(std::string_view text, std::int64_t& value) { return parse_whole_impl(text, value); }
bool parse_whole(std::string_view text, std::uint64_t& value) {
  return !text.starts_with('-') && parse_whole_impl(text, value);
}

void throw_range(std::string_view text, long double min, long double max, bool whole) {
  throw ParseError(fmt::format("expected a {} from {} to {}, got {}", whole ? "whole number" : "number", bound(min),
                               bound(max), quoted(text)));
}

}  // namespace detail

double parse_decimal(std::string_view text, double min, double max) {
  double value = 0;
  bool ok = !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string_view::npos && text.front() != '+';
  if (ok) {
    const auto [end, error] =
        std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
    ok = error == std::errc() && end == text.data() + text.size() && std::isfinite(value);
  }
  if (!ok || value < min || value > max) detail::throw_range(text, min, max, false);
  return value;
}

}  // namespace wanlab::base
