#include "coordinator/machines_run.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/launch.hpp"
#include "wanlab/harness/model/kv_routes.hpp"
#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness::run_detail {
namespace em = wanlab::emulator;

AllocationHosts allocation_hosts(const em::Scenario& scenario, const std::vector<std::string>& nodes,
                                 const em::ResolveHost& resolve) {
  AllocationHosts out;
  out.planning = scenario;
  out.nodes_per_dc.assign(scenario.dcs.size(), 0);
  std::set<std::string> seen;
  for (const std::string& node : nodes) {
    if (!seen.insert(node).second) throw std::runtime_error(fmt::format("node {} is in the allocation twice", node));
    const em::MachineRole role = em::find_node_role(scenario, node, resolve);
    const auto dc = static_cast<std::size_t>(role.dc);
    em::Host host;
    host.dc = scenario.dcs[dc].name;
    host.dc_index = role.dc;
    host.index = out.nodes_per_dc[dc]++;
    host.name = fmt::format("{}-{}", host.dc, host.index);  // make_plan's name for the DC's host `index`
    host.ipv4 = role.address;
    out.nodes[host.name] = node;
    out.hosts.push_back(std::move(host));
  }
  for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc)
    out.planning.dcs[dc].hosts = std::max(1, out.nodes_per_dc[dc]);
  return out;
}

void check_plan_fits(const Plan& plan, const em::Scenario& scenario, const AllocationHosts& allocation) {
  for (const WorkerPlan& w : plan.workers) {
    if (allocation.nodes.count(w.worker.host)) continue;
    throw RunError(
        fmt::format("the plan puts worker {} (stage {}, replica {}) in DC \"{}\", where the allocation has no node: "
                    "ask Slurm for a node of each DC the experiment's placement uses",
                    w.worker.id, w.worker.stage, w.worker.replica, w.worker.dc_name));
  }
  if (!plan.experiment.prefill.enabled) return;
  for (const WorkerPlan& w : plan.workers) {
    const int dc = decode_dc_of(plan.experiment, scenario, w.worker.dc);
    if (dc < 0 || allocation.nodes.count(decode_host_name(scenario, dc))) continue;  // an unknown DC: the run says
    throw RunError(fmt::format(
        "[prefill] decodes worker {}'s requests in DC \"{}\", where the allocation has no node for the decode "
        "sink: ask Slurm for a node there",
        w.worker.id, scenario.dcs[static_cast<std::size_t>(dc)].name));
  }
}

namespace {

std::string describe(const AllocationHosts& allocation, const em::Scenario& scenario) {
  std::string text;
  for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc) {
    std::string nodes;
    for (const em::Host& host : allocation.hosts)
      if (host.dc_index == static_cast<int>(dc)) nodes += (nodes.empty() ? "" : ", ") + allocation.nodes.at(host.name);
    text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", scenario.dcs[dc].name, nodes.empty() ? "-" : nodes);
  }
  return text;
}

}  // namespace

RunRecord run_on_machines(const Experiment& experiment, const em::Scenario& scenario, RunOptions options) {
  if (!scenario.over_machines())
    throw RunError(
        fmt::format("--runtime slurm: {} is not a scenario over machines (no DC names its machines: "
                    "docs/SCALE-OUT.md)",
                    scenario.path));
  if (experiment.scale != 1.0)
    throw RunError(
        fmt::format("--runtime slurm: scale {}: across machines the run goes over the WAN `wanlab join` "
                    "holds, at the scenario's own rates; run with scale = 1 (--scale 1)",
                    experiment.scale));
  if (options.testbed.empty())
    if (const char* name = std::getenv("WANLAB_TESTBED")) options.testbed = name;
  if (options.testbed.empty())
    throw RunError(
        "--runtime slurm: which WAN? WANLAB_TESTBED is not set: run inside scripts/slurm/wan-job.sh, "
        "which joins every node and sets it");
  em::TestbedState local;
  try {
    local = em::load_state(options.testbed);
  } catch (const std::exception& error) {
    throw RunError(fmt::format("--runtime slurm: testbed {} (WANLAB_TESTBED) is not up on this node: {}",
                               base::quoted(options.testbed), error.what()));
  }
  if (!local.machine)
    throw RunError(
        fmt::format("--runtime slurm: testbed {} on this machine is not a part of `wanlab join`", options.testbed));
  std::vector<std::string> dc_names;
  for (const auto& dc : scenario.dcs) dc_names.push_back(dc.name);
  if (local.dcs != dc_names)
    throw RunError(fmt::format("--runtime slurm: testbed {} was joined with DCs {} but {} has {}", options.testbed,
                               fmt::join(local.dcs, ", "), scenario.path, fmt::join(dc_names, ", ")));

  AllocationHosts allocation;
  try {
    allocation = allocation_hosts(scenario, em::slurm_job_nodes(), em::resolve_host);
  } catch (const std::runtime_error& error) {
    throw RunError(fmt::format("--runtime slurm: {}", error.what()));
  }
  const Plan plan = make_plan(experiment, allocation.planning);
  check_plan_fits(plan, allocation.planning, allocation);
  em::TestbedState testbed = local;
  testbed.hosts = allocation.hosts;
  options.control_ipv4 = local.machine->address;
  options.slurm_nodes = allocation.nodes;
  if (options.log)
    options.log(fmt::format("across machines over testbed {} (this node in DC {}): {}", testbed.name, local.machine->dc,
                            describe(allocation, scenario)));
  base::InterruptGuard interrupts;
  RunRecord record = run_plan(plan, allocation.planning, testbed, options);
  if (const int sig = base::interrupted_by())
    throw RunError(fmt::format("interrupted by signal {} ({})", sig, ::strsignal(sig)));
  return record;
}

}  // namespace wanlab::harness::run_detail
