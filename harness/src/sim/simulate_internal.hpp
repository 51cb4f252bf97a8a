// The simulator's link arithmetic, shared by the training simulation and the
// KV cache transfers of BubbleTea (simulate_prefill.cpp).
#pragma once

#include <limits>
#include <vector>

#include "wanlab/harness/sim/simulate.hpp"
#include "wanlab/harness/model/tcp_model.hpp"

namespace wanlab::harness::detail {

// One directed DC pair as the simulator sees it (simulate.hpp): capacity =
// rate x scale (infinite when unlimited), per-stream ceiling x scale.
struct LinkRate {
  double capacity_bps = std::numeric_limits<double>::infinity();
  // What one stream carries at most in the long run: the least of the flow
  // rate, the model's per-stream ceiling, the harness's pacing and
  // window / RTT, x scale.
  double stream_ceiling_bps = std::numeric_limits<double>::infinity();
  double delay_ns = 0;
  TcpPath tcp;  // rates and window x scale, the pair's RTT, pacing (tcp_path_for)
};
LinkRate link_rate(const Experiment& experiment, const emulator::Scenario& scenario, const LinkModel& model, int src,
                   int dst);
// The most one transfer of `streams` streams may take: streams x ceiling.
double transfer_cap_bps(const LinkRate& link, double streams);
// What one transfer gets alone on the link: min(capacity, its cap).
double alone_rate_bps(const LinkRate& link, double streams);

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
