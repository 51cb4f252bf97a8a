// What a worker is told before it starts (control::Assign): its plan, its
// address, the ports its channels listen on with their chunking, and the
// peers it exchanges data with, cross-DC ones paced.
#pragma once

#include <set>
#include <vector>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/harness/run/control.hpp"
#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness::run_detail {

// Worker ids it exchanges data with: its send/recv peers and its ring neighbours.
std::set<int> peers_of(const WorkerPlan& worker);

// Worker `id`'s assignment; hosts[i] is worker i's host. The GPU lease (with
// prefill) is the coordinator's to add.
control::Assign make_assignment(const Plan& plan, const emulator::Scenario& scenario,
                                const std::vector<const emulator::Host*>& hosts, int id);

}  // namespace wanlab::harness::run_detail
