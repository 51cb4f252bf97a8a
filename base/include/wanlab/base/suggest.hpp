// "Did you mean": the known name closest to a mistyped one, for every message
// about an unknown key, option, DC or column.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace wanlab::base {

/// Optimal string alignment distance: edits plus adjacent transpositions, so
/// "dealy" is one step from "delay".
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The known name closest to `name` if it is a likely typo (edit distance at
/// most 1 for names up to 3 characters, else 2), else empty.
std::string closest_name(std::string_view name, std::span<const std::string_view> known);

/// "; did you mean \"west\"?", or `otherwise` when nothing is close.
std::string did_you_mean(std::string_view name, std::span<const std::string_view> known,
                         std::string_view otherwise = "");

}  // namespace wanlab::base
