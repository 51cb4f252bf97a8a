// `wanlab train --runtime slurm`: the run across the machines of a Slurm
// allocation, over the WAN `wanlab join` holds on each (docs/SCALE-OUT.md).
// The plan's hosts of a DC are the allocation's nodes in that DC, in the
// allocation's order; each worker runs on its host's node through srun.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "wanlab/emulator/machines.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/run/run.hpp"

namespace wanlab::harness::run_detail {

// The allocation's nodes as the plan's hosts.
struct AllocationHosts {
  emulator::Scenario planning;               // the scenario with each DC's `hosts` = its nodes (at least 1)
  std::vector<emulator::Host> hosts;         // "<dc>-<i>", with the node's address, no namespace
  std::map<std::string, std::string> nodes;  // host name -> node
  std::vector<int> nodes_per_dc;
};

// Each node's DC by the scenario's machines (by name, or its resolved address
// within an entry). Throws std::runtime_error naming a node in no DC.
AllocationHosts allocation_hosts(const emulator::Scenario& scenario, const std::vector<std::string>& nodes,
                                 const emulator::ResolveHost& resolve);

// Throws RunError when the plan puts a worker on a host the allocation lacks
// (a DC with fewer nodes than the plan's hosts there, or none), or, with
// [prefill], a decode sink in a DC without a node.
void check_plan_fits(const Plan& plan, const emulator::Scenario& scenario, const AllocationHosts& allocation);

RunRecord run_on_machines(const Experiment& experiment, const emulator::Scenario& scenario, RunOptions options);

}  // namespace wanlab::harness::run_detail
