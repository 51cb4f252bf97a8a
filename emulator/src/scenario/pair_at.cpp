// A DC pair over time (scenario.hpp: pair_at, next_pair_change_ns).
#include <limits>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/schedule.hpp"

extern "C" {
#include "wanlab_edt.h"
}

namespace wanlab::emulator {
namespace {

constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

// The scenario as the daemon has it `at_ns` after up: the events due by then
// after its links. `scenario` itself where it has no events (no copy).
class InForce {
 public:
  InForce(const Scenario& scenario, std::uint64_t at_ns) : scenario_(&scenario) {
    if (scenario.events.empty()) return;
    copy_ = scenario;
    copy_.events.clear();
    for (const Event& event : scenario.events)
      if (event.at_ns <= at_ns) copy_.links.push_back(event.link);
    scenario_ = &copy_;
  }
  const Scenario& operator*() const { return *scenario_; }
  const Scenario* operator->() const { return scenario_; }

 private:
  const Scenario* scenario_;
  Scenario copy_;
};

}  // namespace

PairAt pair_at(const Scenario& scenario, int src, int dst, std::uint64_t at_ns) {
  const InForce in_force(scenario, at_ns);
  PairAt result{in_force->pair(src, dst), false};
  const auto schedule = src == dst ? nullptr : in_force->schedule(src, dst);
  if (!schedule || schedule->steps.empty()) return result;
  const ScheduleStep& step = schedule->step_at(at_ns);
  const wanlab_sched_step held = data_plane_step(step);
  wanlab_pair_config config{};
  config.rate_bps = result.params.rate_bps;
  result.paused = wanlab_edt_sched_paused(&config, schedule->columns, &held) != 0;
  result.params.rate_bps = wanlab_edt_sched_rate(&config, schedule->columns, &held);
  if (schedule->columns & WANLAB_SCHED_DELAY) result.params.delay_ns = step.delay_ns;
  if (schedule->columns & WANLAB_SCHED_LOSS) result.params.loss = step.loss;
  return result;
}

std::uint64_t next_pair_change_ns(const Scenario& scenario, int src, int dst, std::uint64_t at_ns) {
  std::uint64_t next = kNever;
  for (const Event& event : scenario.events)
    if (event.at_ns > at_ns) {
      next = event.at_ns;
      break;
    }
  const auto schedule = src == dst ? nullptr : InForce(scenario, at_ns)->schedule(src, dst);
  if (!schedule || schedule->steps.size() < 2) return next;
  const std::uint64_t period = schedule->period_ns;
  const std::uint64_t offset = period != 0 ? at_ns % period : at_ns;
  for (const ScheduleStep& step : schedule->steps)
    if (step.at_ns > offset) return std::min(next, at_ns + (step.at_ns - offset));
  // Past the last step: the period's start, when it loops.
  return period != 0 ? std::min(next, at_ns + (period - offset)) : next;
}

bool has_timeline(const Scenario& scenario) {
  if (!scenario.events.empty()) return true;
  const int dcs = static_cast<int>(scenario.dcs.size());
  for (int src = 0; src < dcs; ++src)
    for (int dst = 0; dst < dcs; ++dst)
      if (src != dst && scenario.schedule(src, dst)) return true;
  return false;
}

}  // namespace wanlab::emulator
