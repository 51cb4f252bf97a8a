// The emulation's verdict on itself (record/health.hpp).
#include "wanlab/harness/record/health.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>

namespace wanlab::harness {
namespace {

double percentile_ms(std::vector<std::int64_t> sorted_ns, double p) {
  if (sorted_ns.empty()) return 0;
  const auto at = static_cast<std::size_t>(p * static_cast<double>(sorted_ns.size() - 1) + 0.5);
  return static_cast<double>(sorted_ns[std::min(at, sorted_ns.size() - 1)]) / 1e6;
}

struct Bound {
  const char* text;
  std::uint64_t ns;
  std::uint64_t ReleaserLateness::*over;
};
constexpr std::array kBounds{
    Bound{"10 us", 10'000, &ReleaserLateness::over_10us},    Bound{"100 us", 100'000, &ReleaserLateness::over_100us},
    Bound{"300 us", 300'000, &ReleaserLateness::over_300us}, Bound{"1 ms", 1'000'000, &ReleaserLateness::over_1ms},
    Bound{"3 ms", 3'000'000, &ReleaserLateness::over_3ms},   Bound{"10 ms", 10'000'000, &ReleaserLateness::over_10ms}};
constexpr std::uint64_t kUnknownWanDelayNs = 5'000'000;

// The largest bound at most `share` of the smallest WAN delay (the first bound if none is).
const Bound& judged_bound(std::uint64_t smallest_wan_delay_ns, double share) {
  const double limit = share * static_cast<double>(smallest_wan_delay_ns ? smallest_wan_delay_ns : kUnknownWanDelayNs);
  const Bound* chosen = &kBounds.front();
  for (const Bound& bound : kBounds)
    if (static_cast<double>(bound.ns) <= limit) chosen = &bound;
  return *chosen;
}

double share_over(const ReleaserLateness& r, std::uint64_t ReleaserLateness::*over) {
  return r.verdicts ? static_cast<double>(r.*over) / static_cast<double>(r.verdicts) : 0;
}

// "p99 <= 100 us": the smallest bound that at most 1% of the verdicts passed.
std::string releaser_p99(const ReleaserLateness& r) {
  for (const Bound& bound : kBounds)
    if (share_over(r, bound.over) <= 0.01) return fmt::format("p99 <= {}", bound.text);
  return "p99 > 10 ms";
}

void judge_wake_ups(const EmulationSamples& samples, const HealthLimits& limits, EmulationHealth& health,
                    std::vector<std::string>& shown, std::vector<std::string>& behind) {
  std::vector<std::int64_t> late = samples.wake_late_ns;
  std::sort(late.begin(), late.end());
  health.compute_ops = late.size();
  if (late.empty()) return;
  health.wake_late_p50_ms = percentile_ms(late, 0.50);
  health.wake_late_p99_ms = percentile_ms(late, 0.99);
  health.wake_late_max_ms = static_cast<double>(late.back()) / 1e6;
  const double late_ns = static_cast<double>(std::accumulate(late.begin(), late.end(), std::int64_t{0}));
  health.wake_late_share = samples.compute_ns > 0 ? late_ns / static_cast<double>(samples.compute_ns) : 0;
  const std::string text = fmt::format("workers woke {:.1f}% of compute late (p99 {:.2f} ms)",
                                       100 * health.wake_late_share, health.wake_late_p99_ms);
  (health.wake_late_share > limits.wake_late_share ? behind : shown).push_back(text);
}

void judge_releaser(const EmulationSamples& samples, const HealthLimits& limits, EmulationHealth& health,
                    std::vector<std::string>& shown, std::vector<std::string>& behind) {
  health.release_path = samples.release_path;
  health.releaser = samples.releaser;
  if (!samples.releaser) {
    if (!samples.release_path.empty())
      shown.push_back(fmt::format("release path {} (the kernel times packets)", samples.release_path));
    return;
  }
  const ReleaserLateness& r = *samples.releaser;
  const Bound& bound = judged_bound(samples.smallest_wan_delay_ns, limits.releaser_late_of_delay);
  health.releaser_limit_ns = bound.ns;
  const double late = share_over(r, bound.over);
  std::string text =
      fmt::format("releaser {} over {} verdicts ({:.2f}% over {}", releaser_p99(r), r.verdicts, 100 * late, bound.text);
  // The pair latest most often, if it alone was over the limit.
  health.releaser_pairs = samples.releaser_pairs;
  const PairReleaserLateness* worst = nullptr;
  for (const PairReleaserLateness& pair : samples.releaser_pairs)
    if (pair.late.verdicts >= limits.releaser_pair_verdicts &&
        share_over(pair.late, bound.over) > limits.releaser_late_share &&
        (worst == nullptr || share_over(pair.late, bound.over) > share_over(worst->late, bound.over)))
      worst = &pair;
  if (worst != nullptr)
    text +=
        fmt::format("; {}->{} {} over {} verdicts, {:.2f}% over {}", worst->from, worst->to, releaser_p99(worst->late),
                    worst->late.verdicts, 100 * share_over(worst->late, bound.over), bound.text);
  text += ")";
  (late > limits.releaser_late_share || worst != nullptr ? behind : shown).push_back(text);
  // A packet dropped on its way to the releaser is lost to the emulation, not to the scenario.
  if (r.dropped > 0) behind.push_back(fmt::format("the release queue dropped {} packets", r.dropped));
}

void judge_cpu(const EmulationSamples& samples, const HealthLimits& limits, EmulationHealth& health,
               std::vector<std::string>& shown, std::vector<std::string>& behind) {
  health.cpus = samples.cpus;
  health.idle_pollers = samples.idle_pollers;
  const auto& busy = samples.cpu_busy;
  if (busy.empty()) return;
  health.cpu_mean = std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size());
  health.cpu_max = *std::max_element(busy.begin(), busy.end());
  const auto saturated = std::count_if(busy.begin(), busy.end(), [&](double b) { return b >= limits.cpu_busy; });
  health.cpu_saturated_share = static_cast<double>(saturated) / static_cast<double>(busy.size());
  const bool over = health.cpu_saturated_share > limits.cpu_saturated_share;
  const std::string text =
      over ? fmt::format("CPU at least {:.0f}% busy in {:.0f}% of the run ({} CPUs)", 100 * limits.cpu_busy,
                         100 * health.cpu_saturated_share, samples.cpus)
           : fmt::format("CPU {:.0f}% (max {:.0f}%, {} CPUs{})", 100 * health.cpu_mean, 100 * health.cpu_max,
                         samples.cpus, samples.idle_pollers ? ", idle time polled" : "");
  (over ? behind : shown).push_back(text);
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

}  // namespace

std::optional<double> releaser_late_share(const ReleaserLateness& r, std::uint64_t bound_ns) {
  for (const Bound& bound : kBounds)
    if (bound.ns == bound_ns) return share_over(r, bound.over);
  return std::nullopt;
}

EmulationHealth judge_emulation(const EmulationSamples& samples, const HealthLimits& limits) {
  EmulationHealth health;
  std::vector<std::string> shown, behind;
  judge_wake_ups(samples, limits, health, shown, behind);
  judge_releaser(samples, limits, health, shown, behind);
  judge_cpu(samples, limits, health, shown, behind);
  health.kept_up = behind.empty();
  if (health.kept_up) {
    health.verdict = "emulation kept up: " + (shown.empty() ? std::string("nothing was measured") : joined(shown));
  } else {
    health.verdict = "emulation fell behind: " + joined(behind) +
                     " - the figures of this run are not faithful; lower `scale` or the request rate, or stop what "
                     "else runs on this machine";
  }
  return health;
}

}  // namespace wanlab::harness
