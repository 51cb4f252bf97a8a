// What the simulator's rooms share: the links inside a DC at scale ([fabric])
// and BubbleTea's side of a simulated run (simulate_prefill.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "model/link_rate.hpp"
#include "wanlab/harness/sim/simulate.hpp"
#include "wanlab/harness/model/link_model.hpp"

namespace wanlab::harness::detail {

// With the experiment's [fabric] (fabric.hpp): the links inside each DC.
struct FabricLinks {
  // Per worker, its server (numbered across DCs): each DC's workers in
  // (stage, replica) order, as many whole workers of tp GPUs per server as fit.
  std::vector<int> server;
  // Per DC, the fabric between its servers: capacity = the plan's GPUs there
  // x NIC rate / oversubscription; one transfer at most its worker's tp NICs;
  // the fabric's latency. Rates x scale.
  std::vector<LinkRate> fabric;
  // Inside a server: unlimited together, one transfer at most tp x NVLink
  // rate x scale, no delay.
  LinkRate nvlink;
};
FabricLinks fabric_links(const Plan& plan, std::size_t dcs);

// Fills record.prefill (the experiment's [prefill] is enabled) from the
// simulated training in `record`; simulate.hpp says how.
void simulate_prefill(RunRecord& record, const emulator::Scenario& scenario, const LinkModel& model);

}  // namespace wanlab::harness::detail
