// The bounds a late event is counted against: the nfqueue releaser counts how
// many of its verdicts left later than each, and a run's emulation health
// judges them at 2% of the run's smallest WAN delay (docs/RUNTIME.md). Ten a
// decade (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8), from 10 us to 10 ms, so the
// bound judged is never more than a quarter below the limit it stands for;
// 10 us, 100 us, 300 us, 1 ms, 3 ms and 10 ms among them, the counters of
// files written before the finer ones.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace wanlab::base {

inline constexpr std::array<std::uint64_t, 31> kLateBoundsNs = [] {
  constexpr std::array<std::uint64_t, 10> kSteps{10, 12, 15, 20, 25, 30, 40, 50, 60, 80};
  std::array<std::uint64_t, 31> bounds{};
  std::uint64_t decade_ns = 1'000;
  for (std::size_t d = 0; d < 3; ++d, decade_ns *= 10)
    for (std::size_t s = 0; s < kSteps.size(); ++s) bounds[d * kSteps.size() + s] = kSteps[s] * decade_ns;
  bounds.back() = 10'000'000;
  return bounds;
}();

// The counter's name: "10us", "250us", "1ms", "1200us" (whole milliseconds
// in ms, the rest in us, so that it is a bare key in TOML and JSON).
std::string late_bound_key(std::uint64_t bound_ns);
// For people: "250 us", "1.2 ms".
std::string late_bound_text(std::uint64_t bound_ns);
// The index of `bound_ns` in kLateBoundsNs; nothing if it is not one.
std::optional<std::size_t> late_bound_index(std::uint64_t bound_ns);

}  // namespace wanlab::base
