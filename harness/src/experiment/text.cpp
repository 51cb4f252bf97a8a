#include "experiment/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wanlab::harness::detail {
std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string joined;
  for (const std::string& item : items) {
    if (!joined.empty()) joined += separator;
    joined += item;
  }
  return joined;
}

std::string dc_chain(const std::vector<std::string>& stage_dcs) {
  std::vector<std::string> parts;
  for (std::size_t stage = 0; stage < stage_dcs.size();) {
    std::size_t end = stage;
    while (end < stage_dcs.size() && stage_dcs[end] == stage_dcs[stage]) ++end;
    parts.push_back(fmt::format("{} x{}", stage_dcs[stage], end - stage));
    stage = end;
  }
  return join(parts, " > ");
}

}  // namespace wanlab::harness::detail
