// `wanlab train`'s whole life: a scaled testbed of its own, the run, and
// always the testbed's removal.
#include <fmt/format.h>

#include <limits>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "interrupts.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/harness/prefill.hpp"
#include "wanlab/harness/run.hpp"

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

void scale_link(em::LinkParams& params, double scale) {
  // 0 means unlimited and stays so; anything else stays at least 1 bit/s.
  const auto rate = [&](std::optional<std::uint64_t>& bps) {
    if (bps && *bps > 0) *bps = std::max<std::uint64_t>(1, scaled(*bps, scale));
  };
  rate(params.rate_bps);
  rate(params.flow_rate_bps);
  if (params.queue && params.queue->kind == em::QueueLimit::Kind::bytes) params.queue->value *= scale;
}

}  // namespace

em::Scenario scale_scenario(const em::Scenario& scenario, double scale) {
  if (!(scale > 0)) throw std::invalid_argument(fmt::format("scale must be > 0, got {}", scale));
  em::Scenario out = scenario;
  if (scale == 1.0) return out;
  scale_link(out.defaults, scale);
  scale_link(out.intra_dc, scale);
  for (auto& link : out.links) scale_link(link.params, scale);
  for (auto& event : out.events) scale_link(event.link.params, scale);
  out.host.tcp_wmem_max = std::max(kMinWmemMax, scaled(scenario.host.tcp_wmem_max.value_or(em::kDefaultTcpWmemMax), scale));
  out.host.tcp_rmem_max = std::max(kMinRmemMax, scaled(scenario.host.tcp_rmem_max.value_or(em::kDefaultTcpRmemMax), scale));
  return out;
}

em::Scenario run_scenario(const Experiment& experiment, const em::Scenario& scenario) {
  em::Scenario out = scale_scenario(scenario, experiment.scale);
  out.seed = experiment.seed;
  return out;
}

std::string run_testbed_name(const em::Scenario& scenario) {
  std::string prefix = scenario.name.substr(0, 5);
  while (!prefix.empty() && prefix.back() == '-') prefix.pop_back();
  if (prefix.empty()) prefix = "run";
  return fmt::format("{}-{}", prefix, ::getpid() % 1000000);
}

RunRecord run_experiment(const Experiment& experiment, const em::Scenario& scenario, const RunOptions& options) {
  const Plan plan = make_plan(experiment, scenario);
  // A malformed request trace is an error before a testbed exists (the run reads it again, to its horizon).
  if (experiment.prefill.enabled && !experiment.prefill.requests_path.empty())
    load_requests(experiment, std::numeric_limits<std::int64_t>::max());
  const em::Scenario scaled_scenario = run_scenario(experiment, scenario);
  run_detail::InterruptGuard interrupts;
  em::UpOptions up;
  up.name = run_testbed_name(scenario);
  up.release = options.release;
  up.progress = options.log;
  const em::TestbedState testbed = em::testbed_up(scaled_scenario, up);
  if (options.log)
    options.log(fmt::format("testbed {} is up ({} DCs, {} hosts, release path {}, scale {}, seed {})", testbed.name,
                            testbed.dcs.size(), testbed.hosts.size(), em::to_string(testbed.release), experiment.scale,
                            experiment.seed));
  RunRecord record;
  try {
    record = run_plan(plan, scenario, testbed, options);
  } catch (...) {
    try {
      em::testbed_down(testbed.name);
    } catch (const std::exception& error) {
      if (options.log) options.log(fmt::format("removing testbed {}: {}", testbed.name, error.what()));
    }
    throw;
  }
  em::testbed_down(testbed.name);
  if (options.log) options.log(fmt::format("testbed {} is down", testbed.name));
  if (const int sig = run_detail::interrupted_by())
    throw RunError(fmt::format("interrupted by signal {} ({})", sig, ::strsignal(sig)));
  return record;
}

}  // namespace wanlab::harness
