// Small text helpers shared by the experiment parser and the planner.
#pragma once

#include "wanlab/base/suggest.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wanlab::harness::detail {

// Names suggested for typos the way the scenario parser does (base/suggest.hpp).
using base::closest_name;
inline std::string suggestion(std::string_view name, std::span<const std::string_view> known,
                              std::string_view otherwise = "") {
  return base::did_you_mean(name, known, otherwise);
}

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// "b x2 > a x1 > c x1": the DCs of a plan's stages in pipeline order, with their stage counts.
std::string dc_chain(const std::vector<std::string>& stage_dcs);

}  // namespace wanlab::harness::detail
