#include "text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wanlab::harness::detail {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> previous(b.size() + 1);
  std::vector<std::size_t> current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

}  // namespace

std::string closest_name(std::string_view name, std::span<const std::string_view> known) {
  std::size_t allowed = name.size() <= 3 ? 1 : 2;
  std::string_view best;
  std::size_t best_distance = allowed + 1;
  for (std::string_view candidate : known) {
    std::size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return std::string(best);
}

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
