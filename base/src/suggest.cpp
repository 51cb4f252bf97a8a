#include "wanlab/base/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace wanlab::base {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string closest_name(std::string_view name, std::span<const std::string_view> known) {
  const std::size_t allowed = name.size() <= 3 ? 1 : 2;
  std::string_view best;
  std::size_t best_distance = allowed + 1;
  for (std::string_view candidate : known) {
    const std::size_t distance = edit_distance(name, candidate);
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
