// Small text helpers shared by the experiment parser and the planner.
#pragma once

#include "wanlab/emulator/input.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wanlab::harness::detail {

// The known name closest to `name` if it is a likely typo (edit distance at
// most 1 for names up to 3 characters, else 2), else empty. The scenario
// parser suggests names the same way.
using wanlab::emulator::closest_name;

// "; did you mean \"west\"?" or `otherwise` when nothing is close.
std::string suggestion(std::string_view name, std::span<const std::string_view> known,
                       std::string_view otherwise = "");

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

}  // namespace wanlab::harness::detail
