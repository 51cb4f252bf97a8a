// What the workers report of one iteration, checked against the plan and put
// on the run's clock: the coordinator's record of a real run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "wanlab/harness/run/control.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness::run_detail {

class IterationReports {
 public:
  // Checks worker `id`'s report against its planned ops (an event per op, a
  // send record per cross-DC send, each once) and keeps it; throws
  // control::ControlError.
  void accept(int id, const WorkerPlan& worker, control::Report report);
  // Moves the iteration's events and cross-DC transfers into `record`, times
  // from `origin_ns` (a send ends when its message had arrived), and the
  // iteration's span: from `start_ns` to its last event's end.
  void finish(const Plan& plan, int iteration, std::int64_t start_ns, std::int64_t origin_ns, RunRecord& record);

 private:
  std::optional<TransferRecord> transfer_of(const Plan& plan, int iteration, int worker,
                                            const control::SendRecord& send, std::int64_t origin_ns) const;

  std::vector<Event> pending_events_;
  std::vector<std::pair<int, control::SendRecord>> pending_sends_;  // (sender, its record) of this iteration
  std::map<std::pair<int, int>, control::Arrival> arrivals_;        // (sender, op) -> its arrival
};

// Compute busy over wall of every worker, over the iterations recorded so far.
double utilization_so_far(const RunRecord& record, std::size_t workers);

}  // namespace wanlab::harness::run_detail
