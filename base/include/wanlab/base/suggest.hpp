// "Did you mean": the known name closest to a mistyped one, for every message
// about an unknown key, option, DC or column.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>

namespace wanlab::base {

/// Names longer than this get no suggestion: no known name is near one, and
/// nobody means a 64-byte key (a 6 MiB one took seconds and gigabytes). The
/// message shows such a name cut, through quoted().
inline constexpr std::size_t kMaxSuggestedName = 64;

/// Optimal string alignment distance: edits plus adjacent transpositions, so
/// "dealy" is one step from "delay". With a `limit`, any distance above it is
/// limit + 1, found early (a length difference above it, or a row of the table
/// all above it). Memory is three rows of the shorter text.
std::size_t edit_distance(std::string_view a, std::string_view b,
                          std::size_t limit = std::numeric_limits<std::size_t>::max() - 1);

/// The known name closest to `name` if it is a likely typo (edit distance at
/// most 1 for names up to 3 characters, else 2), else empty; empty too for a
/// name longer than kMaxSuggestedName.
std::string closest_name(std::string_view name, std::span<const std::string_view> known);

/// "; did you mean \"west\"?", or `otherwise` when nothing is close.
std::string did_you_mean(std::string_view name, std::span<const std::string_view> known,
                         std::string_view otherwise = "");

}  // namespace wanlab::base
