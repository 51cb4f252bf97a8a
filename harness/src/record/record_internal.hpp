// Helpers shared by the summaries and the report writers.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <string>

#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness::detail {

struct IterationSpan {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

int iteration_count(const RunRecord& record);
IterationSpan iteration_span(const RunRecord& record, int iteration);
bool is_compute(OpKind kind);
// The event's op of the plan, when its worker and op index are the plan's.
const Op* op_of(const Plan& plan, const Event& event);
// An all-reduce that ran beside the worker's ops (Op::overlapped).
bool overlapped(const Plan& plan, const Event& event);
// "east->west" for bytes that cross the WAN, else empty.
std::string wan_link_of(const Plan& plan, const Event& event);
// The same for a message from worker `from` to worker `to`.
std::string wan_link_between(const Plan& plan, int from, int to);
// The first iterations the run's means leave out (summarize_run): the first
// of several, which includes connection set-up in a real run.
int skipped_iterations(int iterations);

// Workers in display order: DCs in the order the pipeline first reaches them,
// then stage, then replica.
std::vector<int> display_order(const Plan& plan);

}  // namespace wanlab::harness::detail
