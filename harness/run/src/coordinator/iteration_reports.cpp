#include "coordinator/iteration_reports.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace wanlab::harness::run_detail {
namespace {

namespace ctl = control;

// One record per cross-DC send op of the plan, each once.
void check_send_records(const std::vector<Op>& ops, const std::vector<ctl::SendRecord>& sends) {
  const auto planned =
      std::count_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::send && op.cross_dc; });
  std::set<int> seen;
  for (const auto& send : sends) {
    const bool cross_dc_send = send.op_index < static_cast<int>(ops.size()) &&
                               ops[send.op_index].kind == OpKind::send && ops[send.op_index].cross_dc;
    if (!cross_dc_send || !seen.insert(send.op_index).second)
      throw ctl::ControlError(
          fmt::format("send record for op {} does not match the plan's cross-DC sends", send.op_index));
  }
  if (static_cast<std::ptrdiff_t>(sends.size()) != planned)
    throw ctl::ControlError(fmt::format("{} send records for {} planned cross-DC sends", sends.size(), planned));
}

// An event per planned op, each once, of the op's kind.
void check_events(int id, const std::vector<Op>& ops, const ctl::Report& report) {
  if (report.events.size() != ops.size())
    throw ctl::ControlError(fmt::format("{} events for {} planned ops", report.events.size(), ops.size()));
  std::vector<bool> seen(ops.size());
  for (const Event& e : report.events) {
    if (e.worker != id || e.iteration != report.iteration || e.op_index >= static_cast<int>(ops.size()) ||
        seen[e.op_index] || e.kind != ops[e.op_index].kind)
      throw ctl::ControlError(fmt::format("event for op {} does not match the plan", e.op_index));
    seen[e.op_index] = true;
  }
}

}  // namespace

void IterationReports::accept(int id, const WorkerPlan& worker, ctl::Report report) {
  check_events(id, worker.ops, report);
  check_send_records(worker.ops, report.sends);
  for (const auto& a : report.arrivals) arrivals_[{a.sender, a.sender_op}] = a;
  for (auto& send : report.sends) pending_sends_.emplace_back(id, std::move(send));
  pending_events_.insert(pending_events_.end(), report.events.begin(), report.events.end());
}

// A cross-DC message from both ends, on the run's clock; none if its receiver did not report it.
std::optional<TransferRecord> IterationReports::transfer_of(const Plan& plan, int iteration, int worker,
                                                            const ctl::SendRecord& send, std::int64_t origin_ns) const {
  const auto arrival = arrivals_.find({worker, send.op_index});
  if (arrival == arrivals_.end()) return std::nullopt;
  const Op& op = plan.workers[static_cast<std::size_t>(worker)].ops[static_cast<std::size_t>(send.op_index)];
  TransferRecord t;
  t.worker = worker;
  t.iteration = iteration;
  t.op_index = send.op_index;
  t.peer = op.peer;
  t.microbatch = op.microbatch;
  t.bytes = op.bytes;
  t.queued_ns = send.queued_ns - origin_ns;
  t.first_sent_ns = send.first_sent_ns - origin_ns;
  t.last_sent_ns = send.last_sent_ns - origin_ns;
  t.first_received_ns = arrival->second.first_byte_ns - origin_ns;
  t.last_received_ns = arrival->second.arrival_ns - origin_ns;
  t.streams = send.streams;
  return t;
}

void IterationReports::finish(const Plan& plan, int iteration, std::int64_t start_ns, std::int64_t origin_ns,
                              RunRecord& record) {
  for (const auto& [worker, send] : pending_sends_)
    if (auto transfer = transfer_of(plan, iteration, worker, send, origin_ns))
      record.transfers.push_back(std::move(*transfer));
  pending_sends_.clear();
  std::int64_t end = start_ns;
  for (Event& e : pending_events_) {
    if (e.kind == OpKind::send) {
      const auto arrival = arrivals_.find({e.worker, e.op_index});
      if (arrival != arrivals_.end()) e.end_ns = std::max(e.end_ns, arrival->second.arrival_ns);
    }
    end = std::max(end, e.end_ns);
    e.start_ns -= origin_ns;
    e.end_ns -= origin_ns;
    record.events.push_back(e);
  }
  pending_events_.clear();
  arrivals_.clear();
  record.iteration_start_ns.push_back(start_ns - origin_ns);
  record.iteration_end_ns.push_back(end - origin_ns);
}

double utilization_so_far(const RunRecord& record, std::size_t workers) {
  double busy = 0, wall = 0;
  for (std::size_t i = 0; i < record.iteration_start_ns.size(); ++i)
    wall += static_cast<double>(record.iteration_end_ns[i] - record.iteration_start_ns[i]);
  for (const Event& e : record.events)
    if (e.kind == OpKind::forward || e.kind == OpKind::backward) busy += static_cast<double>(e.end_ns - e.start_ns);
  return wall > 0 ? busy / (wall * static_cast<double>(workers)) : 0;
}

}  // namespace wanlab::harness::run_detail
