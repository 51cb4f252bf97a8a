// The machine's side of a run's emulation health (health_probe.hpp).
#include "coordinator/health_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace wanlab::harness {

IdlePoll parse_idle_poll(const std::string& text) {
  if (text == "auto") return IdlePoll::automatic;
  if (text == "on") return IdlePoll::on;
  if (text == "off") return IdlePoll::off;
  throw std::invalid_argument(fmt::format("'{}' is not auto, on or off", text));
}

}  // namespace wanlab::harness

namespace wanlab::harness::run_detail {
namespace em = wanlab::emulator;

std::uint64_t smallest_wan_delay_ns(const em::Scenario& scenario) {
  std::uint64_t smallest = 0;
  const int dcs = static_cast<int>(scenario.dcs.size());
  for (int src = 0; src < dcs; ++src)
    for (int dst = 0; dst < dcs; ++dst) {
      if (src == dst) continue;
      const std::uint64_t delay = scenario.pair(src, dst).delay_ns;
      if (smallest == 0 || delay < smallest) smallest = delay;
    }
  return smallest;
}

HealthProbe::HealthProbe(const em::TestbedState& testbed, const em::Scenario& scenario, IdlePoll idle_poll,
                         std::chrono::milliseconds interval)
    : releaser_path_(em::releaser_stats_path(testbed.name)),
      release_path_(em::to_string(testbed.release)),
      smallest_wan_delay_ns_(smallest_wan_delay_ns(scenario)),
      interval_(interval) {
  try {
    releaser_before_ = em::read_releaser_stats_if_present(releaser_path_);
  } catch (const std::exception&) {
    // A counter file being replaced: the run's releaser figures start at 0.
  }
  if (idle_poll != IdlePoll::off) {
    idle_pollers_.emplace();
    idle_pollers_running_ = static_cast<int>(idle_pollers_->count());
    if (idle_pollers_running_ == 0)
      fmt::print(stderr, "wanlab train: no idle polling: {}\n", idle_pollers_->why_none());
    if (idle_pollers_running_ > 0) idle_poll_ = idle_poll;
  }
  thread_ = std::thread([this] { sample(); });
}

HealthProbe::~HealthProbe() { stop(); }

void HealthProbe::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  idle_pollers_.reset();
}

std::optional<CpuTimes> HealthProbe::cpu_times_but_polling() const {
  std::optional<CpuTimes> times = base::read_cpu_times();
  if (times && idle_pollers_) times->busy -= std::min(times->busy, idle_pollers_->busy_ticks());
  return times;
}

// Every interval_ a sample; with IdlePoll::automatic also, every
// kPollDecisionInterval, the pollers paused or resumed on the share of the
// CPUs the run kept busy since the last decision.
void HealthProbe::sample() {
  const bool deciding = idle_poll_ == IdlePoll::automatic;
  // A sample every so many ticks (interval_ a multiple of the decisions').
  const auto tick = deciding ? std::min(interval_, kPollDecisionInterval) : interval_;
  const auto ticks_per_sample = std::max<std::int64_t>(1, interval_ / tick);
  std::optional<CpuTimes> last = cpu_times_but_polling();
  std::optional<CpuTimes> last_decided = last;
  std::int64_t ticks = 0;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, tick, [this] { return stopping_; })) {
    const std::optional<CpuTimes> now = cpu_times_but_polling();
    if (deciding && last_decided && now) {
      decisions_polled_ += idle_pollers_->active() ? 1 : 0;
      decisions_++;
      idle_pollers_->set_active(idle_polling_pays(base::busy_share(*last_decided, *now)));
    }
    last_decided = now;
    if (++ticks % ticks_per_sample != 0) continue;
    if (last && now) {
      busy_.push_back(base::busy_share(*last, *now));
      stolen_.push_back(base::stolen_share(*last, *now));
    }
    last = now;
  }
}

void HealthProbe::finish(EmulationSamples& samples) {
  stop();
  samples.cpu_busy = busy_;
  samples.cpu_stolen = stolen_;
  samples.cpu_interval_s = std::chrono::duration<double>(interval_).count();
  samples.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  samples.idle_pollers = idle_pollers_running_;
  if (idle_poll_ == IdlePoll::on) samples.idle_polled_share = 1;
  if (idle_poll_ == IdlePoll::automatic && decisions_ > 0)
    samples.idle_polled_share = static_cast<double>(decisions_polled_) / decisions_;
  samples.release_path = release_path_;
  samples.smallest_wan_delay_ns = smallest_wan_delay_ns_;
  std::optional<em::ReleaserStats> after;
  try {
    after = em::read_releaser_stats_if_present(releaser_path_);
  } catch (const std::exception&) {
  }
  if (!after) return;
  const em::ReleaserStats before = releaser_before_.value_or(em::ReleaserStats{});
  samples.releaser = lateness_between(before, *after);
  samples.releaser->dropped = after->queue_dropped + after->user_dropped - before.queue_dropped - before.user_dropped;
  samples.releaser_pairs = pair_lateness(before, *after);
}

// The verdicts between two readings of the same counters; the latest is the
// later reading's (since the testbed came up).
ReleaserLateness lateness_between(const em::LateCounts& before, const em::LateCounts& after) {
  ReleaserLateness lateness;
  lateness.verdicts = after.packets - before.packets;
  for (std::size_t i = 0; i < base::kLateBoundsNs.size(); ++i)
    lateness.over[base::kLateBoundsNs[i]] = after.late_over[i] - before.late_over[i];
  lateness.max_ns = after.late_max_ns;
  return lateness;
}

// Each pair's verdicts during the run: its counters after less before (a pair
// without any before started at 0).
std::vector<PairReleaserLateness> pair_lateness(const em::ReleaserStats& before, const em::ReleaserStats& after) {
  std::vector<PairReleaserLateness> pairs;
  for (const em::ReleaserStats::Pair& a : after.pairs) {
    em::LateCounts b;
    for (const em::ReleaserStats::Pair& candidate : before.pairs)
      if (candidate.from == a.from && candidate.to == a.to) b = candidate;
    if (a.packets <= b.packets) continue;
    pairs.push_back({a.from, a.to, lateness_between(b, a)});
  }
  return pairs;
}

}  // namespace wanlab::harness::run_detail
