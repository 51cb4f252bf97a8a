// `wanlab train`'s whole life: a scaled testbed of its own, the run, and
// always the testbed's removal.
#include <fmt/format.h>

#include <limits>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "coordinator/machines_run.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/run/run.hpp"

namespace wanlab::harness {
namespace em = wanlab::emulator;

em::Scenario run_scenario(const Experiment& experiment, const em::Scenario& scenario, std::uint64_t min_queue_bytes) {
  em::Scenario out = scale_scenario(scenario, experiment.scale, min_queue_bytes);
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
  if (options.runtime == RuntimeChoice::slurm) return run_detail::run_on_machines(experiment, scenario, options);
  const Plan plan = make_plan(experiment, scenario);
  check_emulated_run(plan, experiment.iterations);  // before a testbed exists; run_plan checks again
  // A malformed request trace is an error before a testbed exists (the run reads it again, to its horizon).
  if (experiment.prefill.enabled && !experiment.prefill.requests_path.empty())
    load_requests(experiment, std::numeric_limits<std::int64_t>::max());
  const em::Scenario scaled_scenario = run_scenario(experiment, scenario, queue_floor_bytes(plan));
  base::InterruptGuard interrupts;
  em::UpOptions up;
  up.name = run_testbed_name(scenario);
  up.release = options.release;
  up.exe = options.exe.empty() ? base::self_exe() : options.exe;
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
  if (const int sig = base::interrupted_by())
    throw RunError(fmt::format("interrupted by signal {} ({})", sig, ::strsignal(sig)));
  return record;
}

}  // namespace wanlab::harness
