// Helpers shared by bubble prediction, the simulator's prefill and the
// prefill summary.
#pragma once

#include <cstddef>
#include <vector>

#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness::detail {

// Indices into record.events, per iteration (events of a bad iteration number
// are left out): one pass, so that per-iteration work stays linear in the run.
std::vector<std::vector<std::size_t>> events_by_iteration(const RunRecord& record, int iterations);

// idle_offsets() over the given events of `iteration` (the compute events
// among them count; the others are ignored).
std::vector<std::vector<Window>> idle_offsets_of(const RunRecord& record, int iteration,
                                                 const std::vector<std::size_t>& events);

}  // namespace wanlab::harness::detail
