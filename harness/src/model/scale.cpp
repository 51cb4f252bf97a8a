// An experiment's emulated WAN at its scale (scale_scenario, simulate.hpp):
// what `wanlab train` brings its testbed up with, and whose host buffers the
// simulator's window ceiling is taken from.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "wanlab/emulator/schedule.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/harness/model/link_model.hpp"

namespace wanlab::harness {
namespace em = wanlab::emulator;

namespace {

// The emulator keeps the kernel's initial buffer sizes (16 KiB send,
// 128 KiB receive); limits below them would not bind.
constexpr std::uint64_t kMinWmemMax = 16u << 10;
constexpr std::uint64_t kMinRmemMax = 128u << 10;

std::uint64_t scaled(std::uint64_t value, double scale) {
  return static_cast<std::uint64_t>(std::llround(static_cast<double>(value) * scale));
}

void scale_link(em::LinkParams& params, double scale, std::uint64_t queue_floor_bytes) {
  // 0 means unlimited and stays so; anything else stays at least 1 bit/s.
  const auto rate = [&](std::optional<std::uint64_t>& bps) {
    if (bps && *bps > 0) *bps = std::max<std::uint64_t>(1, scaled(*bps, scale));
  };
  rate(params.rate_bps);
  rate(params.flow_rate_bps);
  if (params.queue && params.queue->kind == em::QueueLimit::Kind::bytes) {
    const double full_size = params.queue->value;
    params.queue->value = std::max(full_size * scale, std::min(full_size, static_cast<double>(queue_floor_bytes)));
  }
}

// A schedule's rate column at `scale` (a step's 0 pauses the link and stays
// 0); its delays, losses and shares stay. Without a rate column: itself.
std::shared_ptr<const em::Schedule> scale_schedule(const std::shared_ptr<const em::Schedule>& schedule, double scale) {
  if (!schedule || (schedule->columns & WANLAB_SCHED_RATE) == 0) return schedule;
  auto out = std::make_shared<em::Schedule>(*schedule);
  for (em::ScheduleStep& step : out->steps)
    if (step.rate_bps > 0) step.rate_bps = std::max<std::uint64_t>(1, scaled(step.rate_bps, scale));
  return out;
}

void scale_spec(em::LinkSpec& spec, double scale, std::uint64_t queue_floor_bytes) {
  scale_link(spec.params, scale, queue_floor_bytes);
  spec.schedule = scale_schedule(spec.schedule, scale);
}

}  // namespace

em::Scenario scale_scenario(const em::Scenario& scenario, double scale, std::uint64_t queue_floor_bytes) {
  if (!(scale > 0)) throw std::invalid_argument(fmt::format("scale must be > 0, got {}", scale));
  em::Scenario out = scenario;
  if (scale == 1.0) return out;
  scale_link(out.defaults, scale, queue_floor_bytes);
  out.defaults_schedule = scale_schedule(out.defaults_schedule, scale);
  scale_link(out.intra_dc, scale, queue_floor_bytes);
  for (auto& link : out.links) scale_spec(link, scale, queue_floor_bytes);
  for (auto& event : out.events) scale_spec(event.link, scale, queue_floor_bytes);
  out.host.tcp_wmem_max =
      std::max(kMinWmemMax, scaled(scenario.host.tcp_wmem_max.value_or(em::kDefaultTcpWmemMax), scale));
  out.host.tcp_rmem_max =
      std::max(kMinRmemMax, scaled(scenario.host.tcp_rmem_max.value_or(em::kDefaultTcpRmemMax), scale));
  return out;
}

std::uint64_t queue_floor_bytes(const Plan& plan) {
  std::uint64_t largest = 0;
  for (const WorkerPlan& worker : plan.workers)
    for (const Op& op : worker.ops)
      if (op.kind == OpKind::send) largest = std::max(largest, op.bytes);
  return 2 * largest;
}

}  // namespace wanlab::harness
