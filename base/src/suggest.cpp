#include "wanlab/base/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace wanlab::base {

std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  limit = std::min(limit, std::numeric_limits<std::size_t>::max() - 1);
  if (a.size() < b.size()) std::swap(a, b);  // the rows run along the shorter, b
  if (a.size() - b.size() > limit) return limit + 1;
  // Rows i-2, i-1 and i of the (a.size()+1) x (b.size()+1) table.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    std::size_t row_min = row[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
      row_min = std::min(row_min, row[j]);
    }
    // No row's least entry is below the one before's, so the distance is at least this.
    if (row_min > limit) return limit + 1;
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return std::min(previous[b.size()], limit + 1);
}

std::string closest_name(std::string_view name, std::span<const std::string_view> known) {
  if (name.size() > kMaxSuggestedName) return {};
  const std::size_t allowed = name.size() <= 3 ? 1 : 2;
  std::string_view best;
  std::size_t best_distance = allowed + 1;
  for (std::string_view candidate : known) {
    const std::size_t distance = edit_distance(name, candidate, allowed);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return std::string(best);
}

std::string did_you_mean(std::string_view name, std::span<const std::string_view> known, std::string_view otherwise) {
  const std::string closest = closest_name(name, known);
  return closest.empty() ? std::string(otherwise) : fmt::format("; did you mean \"{}\"?", closest);
}

}  // namespace wanlab::base
