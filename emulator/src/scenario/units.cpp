#include "wanlab/emulator/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <strings.h>

#include "wanlab/base/parse.hpp"

namespace wanlab::emulator::units {
namespace {

// 128-bit intermediates keep "1.5gbit" and "0.9765625kb" exact.
__extension__ using uint128 = unsigned __int128;

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

// value[unit] = number * num / den of the base quantity.
struct Unit {
  std::string_view name;
  std::uint64_t num;
  std::uint64_t den = 1;
};

struct Quantity {
  std::string_view expected;   // "a rate like \"100mbit\""
  std::string_view unit_list;  // shown when the unit is missing or unknown
};

constexpr Quantity kRate{R"(a rate like "100mbit")",
                         "bit, kbit, mbit, gbit, tbit, kibit, mibit, gibit, tibit, bps, kbps, "
                         "mbps, gbps, tbps"};
constexpr Quantity kTime{R"(a time like "35ms")", "s, ms, us, ns (or sec, msec, usec, nsec)"};
constexpr Quantity kSize{R"(a size like "4mb")",
                         "b, kb, mb, gb (1024-based; also k, m, g, kbit, "
                         "mbit, gbit)"};
constexpr Quantity kPercent{R"(a percentage like "0.1%")", "%"};

constexpr std::array kRateUnits{
    Unit{"bit", 1},
    Unit{"kbit", 1'000},
    Unit{"mbit", 1'000'000},
    Unit{"gbit", 1'000'000'000},
    Unit{"tbit", 1'000'000'000'000},
    Unit{"kibit", 1ULL << 10},
    Unit{"mibit", 1ULL << 20},
    Unit{"gibit", 1ULL << 30},
    Unit{"tibit", 1ULL << 40},
    Unit{"bps", 8},
    Unit{"kbps", 8'000},
    Unit{"mbps", 8'000'000},
    Unit{"gbps", 8'000'000'000},
    Unit{"tbps", 8'000'000'000'000},
};

constexpr std::array kTimeUnits{
    Unit{"s", 1'000'000'000},
    Unit{"sec", 1'000'000'000},
    Unit{"secs", 1'000'000'000},
    Unit{"ms", 1'000'000},
    Unit{"msec", 1'000'000},
    Unit{"msecs", 1'000'000},
    Unit{"us", 1'000},
    Unit{"usec", 1'000},
    Unit{"usecs", 1'000},
    Unit{"ns", 1},
    Unit{"nsec", 1},
    Unit{"nsecs", 1},
};

constexpr std::array kSizeUnits{
    Unit{"b", 1},
    Unit{"k", 1ULL << 10},
    Unit{"kb", 1ULL << 10},
    Unit{"m", 1ULL << 20},
    Unit{"mb", 1ULL << 20},
    Unit{"g", 1ULL << 30},
    Unit{"gb", 1ULL << 30},
    Unit{"kbit", 1ULL << 10, 8},
    Unit{"mbit", 1ULL << 20, 8},
    Unit{"gbit", 1ULL << 30, 8},
};

// Units format_* chooses from, largest first.
constexpr std::array kRateFormatUnits{Unit{"tbit", 1'000'000'000'000}, Unit{"gbit", 1'000'000'000},
                                      Unit{"mbit", 1'000'000}, Unit{"kbit", 1'000}, Unit{"bit", 1}};
constexpr std::array kTimeFormatUnits{Unit{"s", 1'000'000'000}, Unit{"ms", 1'000'000}, Unit{"us", 1'000},
                                      Unit{"ns", 1}};
constexpr std::array kSizeFormatUnits{Unit{"gb", 1ULL << 30}, Unit{"mb", 1ULL << 20}, Unit{"kb", 1ULL << 10},
                                      Unit{"b", 1}};

// Keeps mantissa * unit and 10^digits * unit within 128 bits.
constexpr int kMaxFractionDigits = 30;
// format_* stops looking for an exact decimal in a unit after this many digits.
constexpr int kMaxFormatDigits = 19;

// A decimal number as written: mantissa * 10^-fraction_digits.
struct Decimal {
  std::uint64_t mantissa = 0;
  int fraction_digits = 0;
};

[[noreturn]] void fail(const Quantity& quantity, std::string_view text, std::string_view why = {}) {
  std::string message = fmt::format("expected {}, got {}", quantity.expected, base::quoted(text));
  if (!why.empty()) message += fmt::format(" ({})", why);
  throw std::invalid_argument(message);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

uint128 power_of_ten(int exponent) {
  uint128 result = 1;
  for (int i = 0; i < exponent; ++i) result *= 10;
  return result;
}

// Consumes "123", "1.5" or ".5" from the front of `rest`; nullopt if no digit.
std::optional<Decimal> take_decimal(std::string_view& rest, const Quantity& quantity, std::string_view text) {
  Decimal number;
  bool any_digit = false;
  bool in_fraction = false;
  std::size_t i = 0;
  for (; i < rest.size(); ++i) {
    char c = rest[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (!is_digit(c)) break;
    any_digit = true;
    auto digit = static_cast<std::uint64_t>(c - '0');
    if (number.mantissa > (kMaxU64 - digit) / 10 || number.fraction_digits == kMaxFractionDigits) {
      fail(quantity, text, "too many digits");
    }
    number.mantissa = number.mantissa * 10 + digit;
    if (in_fraction) ++number.fraction_digits;
  }
  if (!any_digit) return std::nullopt;
  rest.remove_prefix(i);
  return number;
}

// Splits "1.5mbit" into its number and its unit text, rejecting signs and
// text without a number.
std::pair<Decimal, std::string_view> split_number(std::string_view text, const Quantity& quantity) {
  std::string_view rest = trim(text);
  if (!rest.empty() && rest.front() == '-') fail(quantity, text, "negative values are not allowed");
  if (!rest.empty() && rest.front() == '+') rest.remove_prefix(1);
  std::optional<Decimal> number = take_decimal(rest, quantity, text);
  if (!number) fail(quantity, text);
  return {*number, trim(rest)};
}

template <std::size_t N>
const Unit& find_unit(const std::array<Unit, N>& units, std::string_view name, const Quantity& quantity,
                      std::string_view text) {
  if (name.empty()) fail(quantity, text, fmt::format("missing unit; use one of {}", quantity.unit_list));
  for (const Unit& unit : units) {
    if (unit.name.size() == name.size() && strncasecmp(unit.name.data(), name.data(), name.size()) == 0) {
      return unit;
    }
  }
  fail(quantity, text, fmt::format("unknown unit {}; use one of {}", base::quoted(name), quantity.unit_list));
}

// number * unit, rounded half up, or an error if it does not fit in 64 bits.
std::uint64_t scale(Decimal number, const Unit& unit, const Quantity& quantity, std::string_view text) {
  uint128 numerator = static_cast<uint128>(number.mantissa) * unit.num;
  uint128 denominator = power_of_ten(number.fraction_digits) * unit.den;
  uint128 rounded = (numerator + denominator / 2) / denominator;
  if (rounded > kMaxU64) fail(quantity, text, "too large");
  return static_cast<std::uint64_t>(rounded);
}

template <std::size_t N>
std::uint64_t parse_quantity(std::string_view text, const std::array<Unit, N>& units, const Quantity& quantity) {
  auto [number, unit_name] = split_number(text, quantity);
  return scale(number, find_unit(units, unit_name, quantity, text), quantity, text);
}

// value / unit written exactly in decimal, or nullopt if it does not terminate
// within a few digits.
std::optional<std::string> exact_decimal(std::uint64_t value, const Unit& unit) {
  uint128 numerator = static_cast<uint128>(value) * unit.den;
  auto whole = static_cast<std::uint64_t>(numerator / unit.num);
  uint128 remainder = numerator % unit.num;
  std::string text = std::to_string(whole);
  if (remainder == 0) return text + std::string(unit.name);
  text += '.';
  for (int digits = 0; remainder != 0; ++digits) {
    if (digits == kMaxFormatDigits) return std::nullopt;
    remainder *= 10;
    text += static_cast<char>('0' + static_cast<int>(remainder / unit.num));
    remainder %= unit.num;
  }
  return text + std::string(unit.name);
}

// Shorter wins; at equal length a whole number ("500mbit" over "0.5gbit").
bool shorter_or_whole(const std::string& candidate, const std::string& best) {
  if (candidate.size() != best.size()) return candidate.size() < best.size();
  return candidate.find('.') == std::string::npos && best.find('.') != std::string::npos;
}

template <std::size_t N>
std::string format_shortest(std::uint64_t value, const std::array<Unit, N>& units) {
  std::string best;
  for (const Unit& unit : units) {
    std::optional<std::string> text = exact_decimal(value, unit);
    if (text && (best.empty() || shorter_or_whole(*text, best))) best = std::move(*text);
  }
  return best;  // never empty: the last unit is always exact
}

}  // namespace

std::uint64_t parse_rate(std::string_view text) {
  std::uint64_t bps = parse_quantity(text, kRateUnits, kRate);
  if (bps == 0) fail(kRate, text, "a rate must be greater than 0; leave the rate out for unlimited");
  return bps;
}

std::uint64_t parse_time(std::string_view text) {
  // Clocks count signed 64-bit nanoseconds; a longer time would wrap to the past.
  const std::uint64_t ns = parse_quantity(text, kTimeUnits, kTime);
  if (ns > kMaxTimeNs) fail(kTime, text, "too large; at most 9223372036s, about 292 years");
  return ns;
}

std::uint64_t parse_size(std::string_view text) { return parse_quantity(text, kSizeUnits, kSize); }

double parse_percent(std::string_view text) {
  auto [number, unit_name] = split_number(text, kPercent);
  if (unit_name != "%") {
    fail(kPercent, text, unit_name.empty() ? "missing %" : "the only unit is %");
  }
  if (number.mantissa > 100 * power_of_ten(number.fraction_digits)) {
    fail(kPercent, text, "must be at most 100%");
  }
  return static_cast<double>(number.mantissa) / std::pow(10.0, static_cast<double>(number.fraction_digits) + 2);
}

std::string format_rate(std::uint64_t bps) { return format_shortest(bps, kRateFormatUnits); }
std::string format_time(std::uint64_t ns) { return format_shortest(ns, kTimeFormatUnits); }
std::string format_size(std::uint64_t bytes) { return format_shortest(bytes, kSizeFormatUnits); }

std::string format_percent(double fraction) {
  if (!(fraction >= 0) || fraction > 1) return fmt::format("{}%", fraction * 100);
  std::string text;
  for (int decimals = 0; decimals <= 30; ++decimals) {
    text = fmt::format("{:.{}f}", fraction * 100, decimals);
    // Trailing zeros add nothing; "1.50" is found as "1.5" one step earlier.
    if (decimals > 0 && text.back() == '0') continue;
    if (parse_percent(text + "%") == fraction) break;
  }
  return text + "%";
}

}  // namespace wanlab::emulator::units
