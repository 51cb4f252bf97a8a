// With a [fabric], the links inside each DC as the simulator models them
// (simulate_internal.hpp): servers of gpus_per_server GPUs, NVLink inside a
// server, the DC's fabric between them.
#include <algorithm>
#include <vector>

#include "sim/simulate_internal.hpp"

namespace wanlab::harness::detail {
namespace {

// Per DC, its workers in (stage, replica) order: a stage's replicas side by
// side, so a ring's neighbours share a server where they fit.
std::vector<std::vector<int>> workers_by_dc(const Plan& plan, std::size_t dcs) {
  std::vector<std::vector<int>> by_dc(dcs);
  const int pp = plan.experiment.parallel.pp;
  const int dp = plan.experiment.parallel.dp;
  for (int stage = 0; stage < pp; ++stage) {
    for (int replica = 0; replica < dp; ++replica) {
      const int id = plan.worker_id(stage, replica);
      by_dc[static_cast<std::size_t>(plan.workers[static_cast<std::size_t>(id)].worker.dc)].push_back(id);
    }
  }
  return by_dc;
}

}  // namespace

FabricLinks fabric_links(const Plan& plan, std::size_t dcs) {
  const Experiment& experiment = plan.experiment;
  const Fabric& fabric = experiment.fabric.value();
  const int tp = experiment.parallel.tp;
  const double scale = experiment.scale;
  FabricLinks links;
  links.server.assign(plan.workers.size(), -1);
  // Whole workers per server: a worker wider than a server has it alone (and more).
  const std::size_t per_server = static_cast<std::size_t>(std::max(1, fabric.gpus_per_server / tp));
  int next_server = 0;
  for (const std::vector<int>& workers : workers_by_dc(plan, dcs)) {
    for (std::size_t i = 0; i < workers.size(); ++i) {
      if (i % per_server == 0) ++next_server;
      links.server[static_cast<std::size_t>(workers[i])] = next_server;
    }
    LinkRate link;
    link.capacity_bps = static_cast<double>(workers.size()) * tp * fabric.nic_bps / fabric.oversubscription * scale;
    link.stream_ceiling_bps = tp * fabric.nic_bps * scale;
    link.delay_ns = static_cast<double>(fabric.latency_ns);
    links.fabric.push_back(link);
  }
  links.nvlink.stream_ceiling_bps = tp * fabric.nvlink_bps * scale;
  return links;
}

}  // namespace wanlab::harness::detail
