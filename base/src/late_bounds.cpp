#include "wanlab/base/late_bounds.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wanlab::base {

std::string late_bound_key(std::uint64_t bound_ns) {
  if (bound_ns % 1'000'000 == 0) return fmt::format("{}ms", bound_ns / 1'000'000);
  return fmt::format("{}us", bound_ns / 1'000);
}

std::string late_bound_text(std::uint64_t bound_ns) {
  if (bound_ns >= 1'000'000) return fmt::format("{:g} ms", static_cast<double>(bound_ns) / 1e6);
  return fmt::format("{} us", bound_ns / 1'000);
}

std::optional<std::size_t> late_bound_index(std::uint64_t bound_ns) {
  const auto* at = std::find(kLateBoundsNs.begin(), kLateBoundsNs.end(), bound_ns);
  if (at == kLateBoundsNs.end()) return std::nullopt;
  return static_cast<std::size_t>(at - kLateBoundsNs.begin());
}

}  // namespace wanlab::base
