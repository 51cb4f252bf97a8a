#include "text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wanlab::harness::detail {
std::string suggestion(std::string_view name, std::span<const std::string_view> known,
                       std::string_view otherwise) {
  std::string closest = closest_name(name, known);
  return closest.empty() ? std::string(otherwise) : fmt::format("; did you mean \"{}\"?", closest);
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string joined;
  for (const std::string& item : items) {
    if (!joined.empty()) joined += separator;
    joined += item;
  }
  return joined;
}

}  // namespace wanlab::harness::detail
