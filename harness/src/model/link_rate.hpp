// A directed DC pair's rate arithmetic, as the link model gives it to the
// simulator, the ring pacing and KvRoutes (link_model.cpp).
#pragma once

#include <limits>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/model/tcp_model.hpp"

namespace wanlab::harness::detail {

// One directed DC pair as the runners' models see it (sim/simulate.hpp): capacity =
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
// The same `at_ns` into the testbed's timeline (emulator::pair_at: its
// [[event]]s and schedules), the harness's pacing still at the pair's
// configured rate (the coordinator sets it once); a paused step has
// capacity 0.
LinkRate link_rate_at(const Experiment& experiment, const emulator::Scenario& scenario, const LinkModel& model, int src,
                      int dst, std::uint64_t at_ns);
// The most one transfer of `streams` streams may take: streams x ceiling.
double transfer_cap_bps(const LinkRate& link, double streams);
// What one transfer gets alone on the link: min(capacity, its cap).
double alone_rate_bps(const LinkRate& link, double streams);

}  // namespace wanlab::harness::detail
