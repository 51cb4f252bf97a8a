// tc-style quantities. Each parser throws std::invalid_argument with a message
// that says what was expected ("expected a rate like 100mbit").
//
// Numbers are plain decimals ("100", "1.5", ".5"); no sign, no exponent. Unit
// names are case-insensitive and a unit is always required: "500" is an error.
// Messages never name the field; callers prefix it ("--rate: ..." or
// "file:line:column: link.rate: ...").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wanlab::emulator::units {

inline constexpr std::uint64_t kMaxTimeNs = 9'223'372'036'854'775'807;  // INT64_MAX

// bit kbit mbit gbit tbit (SI), kibit mibit gibit tibit (IEC), bps kbps mbps
// gbps tbps (bytes per second, as tc). Returns bits per second, rounded to the
// nearest integer; must be greater than 0 (there is no "unlimited" rate text).
std::uint64_t parse_rate(std::string_view text);
// s sec secs ms msec msecs us usec usecs ns nsec nsecs. Returns nanoseconds,
// rounded to the nearest integer, at most kMaxTimeNs (what a signed 64-bit
// nanosecond clock can add without wrapping).
std::uint64_t parse_time(std::string_view text);
// b k kb m mb g gb (1024-based, as tc), kbit mbit gbit (1024-based bits).
// Returns bytes, rounded to the nearest integer.
std::uint64_t parse_size(std::string_view text);
// "0.1%" -> 0.001. Must be within [0, 100]%.
double parse_percent(std::string_view text);

// Each returns the shortest string that parses back to exactly the argument;
// on a tie a whole number beats a fraction, then the larger unit wins:
// 500000000 -> "500mbit" (not "0.5gbit"), 1500000 -> "1.5mbit", 0 -> "0bit"
// (callers decide whether 0 means "unlimited").
std::string format_rate(std::uint64_t bps);    // "500mbit"
std::string format_time(std::uint64_t ns);     // "35ms", "50us", 0 -> "0s"
std::string format_size(std::uint64_t bytes);  // "4mb", "1000b"
// Shortest decimal of the percentage that parses back to the same double.
std::string format_percent(double fraction);  // 0.001 -> "0.1%"

}  // namespace wanlab::emulator::units
