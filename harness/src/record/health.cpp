// The emulation's verdict on itself (record/health.hpp).
#include "wanlab/harness/record/health.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

#include "wanlab/base/cpu_times.hpp"
#include "wanlab/base/late_bounds.hpp"

namespace wanlab::harness {
namespace {

double percentile_ms(std::vector<std::int64_t> sorted_ns, double p) {
  if (sorted_ns.empty()) return 0;
  const auto at = static_cast<std::size_t>(p * static_cast<double>(sorted_ns.size() - 1) + 0.5);
  return static_cast<double>(sorted_ns[std::min(at, sorted_ns.size() - 1)]) / 1e6;
}

constexpr std::uint64_t kUnknownWanDelayNs = 5'000'000;

// The largest bound at most `share` of the smallest WAN delay (the first bound if none is).
std::uint64_t judged_bound_ns(std::uint64_t smallest_wan_delay_ns, double share) {
  const double limit = share * static_cast<double>(smallest_wan_delay_ns ? smallest_wan_delay_ns : kUnknownWanDelayNs);
  std::uint64_t chosen = base::kLateBoundsNs.front();
  for (const std::uint64_t bound : base::kLateBoundsNs)
    if (static_cast<double>(bound) <= limit) chosen = bound;
  return chosen;
}

// The share of the verdicts later than `bound_ns`: 0 without verdicts or a counter for it.
double share_over(const ReleaserLateness& r, std::uint64_t bound_ns) {
  const auto counter = r.over.find(bound_ns);
  if (r.verdicts == 0 || counter == r.over.end()) return 0;
  return static_cast<double>(counter->second) / static_cast<double>(r.verdicts);
}

// "p99 <= 250 us": the smallest bound that at most 1% of the verdicts passed.
std::string releaser_p99(const ReleaserLateness& r) {
  for (const auto& [bound, verdicts] : r.over)
    if (share_over(r, bound) <= 0.01) return fmt::format("p99 <= {}", base::late_bound_text(bound));
  return r.over.empty() ? "p99 unknown" : fmt::format("p99 > {}", base::late_bound_text(r.over.rbegin()->first));
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
  const std::uint64_t bound = judged_bound_ns(samples.smallest_wan_delay_ns, limits.releaser_late_of_delay);
  const std::string bound_text = base::late_bound_text(bound);
  health.releaser_limit_ns = bound;
  const double late = share_over(r, bound);
  std::string text =
      fmt::format("releaser {} over {} verdicts ({:.2f}% over {}", releaser_p99(r), r.verdicts, 100 * late, bound_text);
  // The pair latest most often, if it alone was over the limit.
  health.releaser_pairs = samples.releaser_pairs;
  const PairReleaserLateness* worst = nullptr;
  for (const PairReleaserLateness& pair : samples.releaser_pairs)
    if (pair.late.verdicts >= limits.releaser_pair_verdicts &&
        share_over(pair.late, bound) > limits.releaser_late_share &&
        (worst == nullptr || share_over(pair.late, bound) > share_over(worst->late, bound)))
      worst = &pair;
  if (worst != nullptr)
    text +=
        fmt::format("; {}->{} {} over {} verdicts, {:.2f}% over {}", worst->from, worst->to, releaser_p99(worst->late),
                    worst->late.verdicts, 100 * share_over(worst->late, bound), bound_text);
  text += ")";
  (late > limits.releaser_late_share || worst != nullptr ? behind : shown).push_back(text);
  // A packet dropped on its way to the releaser is lost to the emulation, not to the scenario.
  if (r.dropped > 0) behind.push_back(fmt::format("the release queue dropped {} packets", r.dropped));
}

// ", 6% stolen by the hypervisor", or nothing.
std::string stolen_part(const EmulationHealth& health) {
  return health.cpu_stolen_mean >= base::kStolenNamed
             ? fmt::format(", {:.0f}% stolen by the hypervisor", 100 * health.cpu_stolen_mean)
             : std::string();
}

// ", idle time polled 40% of the run", or nothing.
std::string polled_part(const EmulationHealth& health) {
  return health.idle_polled_share > 0
             ? fmt::format(", idle time polled {:.0f}% of the run", 100 * health.idle_polled_share)
             : std::string();
}

// The mean and the largest of per-interval shares; zeros without intervals.
std::pair<double, double> mean_and_max(const std::vector<double>& shares) {
  if (shares.empty()) return {0, 0};
  return {std::accumulate(shares.begin(), shares.end(), 0.0) / static_cast<double>(shares.size()),
          *std::max_element(shares.begin(), shares.end())};
}

void judge_cpu(const EmulationSamples& samples, const HealthLimits& limits, EmulationHealth& health,
               std::vector<std::string>& shown, std::vector<std::string>& behind) {
  health.cpus = samples.cpus;
  health.idle_pollers = samples.idle_pollers;
  health.idle_polled_share = samples.idle_pollers > 0 ? samples.idle_polled_share : 0;
  std::tie(health.cpu_stolen_mean, health.cpu_stolen_max) = mean_and_max(samples.cpu_stolen);
  const auto& busy = samples.cpu_busy;
  if (busy.empty()) return;
  std::tie(health.cpu_mean, health.cpu_max) = mean_and_max(busy);
  const auto saturated = std::count_if(busy.begin(), busy.end(), [&](double b) { return b >= limits.cpu_busy; });
  health.cpu_saturated_share = static_cast<double>(saturated) / static_cast<double>(busy.size());
  const bool over = health.cpu_saturated_share > limits.cpu_saturated_share;
  const std::string text =
      over ? fmt::format("CPU at least {:.0f}% busy in {:.0f}% of the run ({} CPUs)", 100 * limits.cpu_busy,
                         100 * health.cpu_saturated_share, samples.cpus)
           : fmt::format("CPU {:.0f}% (max {:.0f}%, {} CPUs{}{})", 100 * health.cpu_mean, 100 * health.cpu_max,
                         samples.cpus, stolen_part(health), polled_part(health));
  (over ? behind : shown).push_back(text);
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

}  // namespace

std::optional<double> releaser_late_share(const ReleaserLateness& r, std::uint64_t bound_ns) {
  if (!r.over.contains(bound_ns)) return std::nullopt;
  return share_over(r, bound_ns);
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
    // A VM whose host runs other guests on its CPUs loses time no setting of
    // the run controls: say so, so that the user does not only lower the load.
    const std::string host =
        health.cpu_stolen_mean >= base::kStolenNamed
            ? fmt::format(
                  "the hypervisor took {:.0f}% of this VM's CPU time (max {:.0f}% of an interval): rerun "
                  "when the host is quieter, ",
                  100 * health.cpu_stolen_mean, 100 * health.cpu_stolen_max)
            : std::string();
    health.verdict = "emulation fell behind: " + joined(behind) + " - the figures of this run are not faithful; " +
                     host + "lower `scale` or the request rate, or stop what else runs on this machine";
  }
  return health;
}

}  // namespace wanlab::harness
