#include "text.hpp"

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

}  // namespace wanlab::harness::detail
