// Per-iteration figures from a run's events: time, throughput, GPU busy time,
// network waits and WAN bytes.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "record/record_internal.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {
namespace detail {

int iteration_count(const RunRecord& record) {
  int count = static_cast<int>(record.iteration_start_ns.size());
  for (const Event& event : record.events) count = std::max(count, event.iteration + 1);
  return count;
}

IterationSpan iteration_span(const RunRecord& record, int iteration) {
  auto index = static_cast<std::size_t>(iteration);
  if (index < record.iteration_start_ns.size() && index < record.iteration_end_ns.size()) {
    return {record.iteration_start_ns[index], record.iteration_end_ns[index]};
  }
  // A record without iteration bounds (an interrupted run): the events' extent.
  IterationSpan span{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  for (const Event& event : record.events) {
    if (event.iteration != iteration) continue;
    span.start_ns = std::min(span.start_ns, event.start_ns);
    span.end_ns = std::max(span.end_ns, event.end_ns);
  }
  if (span.start_ns > span.end_ns) return {0, 0};
  return span;
}

bool is_compute(OpKind kind) { return kind == OpKind::forward || kind == OpKind::backward; }

const Op* op_of(const Plan& plan, const Event& event) {
  if (event.worker < 0 || static_cast<std::size_t>(event.worker) >= plan.workers.size()) return nullptr;
  const std::vector<Op>& ops = plan.workers[static_cast<std::size_t>(event.worker)].ops;
  if (event.op_index < 0 || static_cast<std::size_t>(event.op_index) >= ops.size()) return nullptr;
  return &ops[static_cast<std::size_t>(event.op_index)];
}

bool overlapped(const Plan& plan, const Event& event) {
  const Op* op = op_of(plan, event);
  return event.kind == OpKind::allreduce && op != nullptr && op->overlapped;
}

// The link an event's bytes take, or empty when they stay inside a DC: a send
// goes to its peer, an all-reduce's ring traffic to the worker's successor.
std::string wan_link_of(const Plan& plan, const Event& event) {
  if (!event.cross_dc || event.worker < 0 || static_cast<std::size_t>(event.worker) >= plan.workers.size()) return {};
  const Worker& self = plan.workers[static_cast<std::size_t>(event.worker)].worker;
  int to = -1;
  if (event.kind == OpKind::send) {
    to = event.peer;
  } else if (event.kind == OpKind::allreduce) {
    const Op* op = op_of(plan, event);
    const std::vector<int>& ring = op != nullptr && op->within_dc ? self.dc_group : self.allreduce_group;
    auto position = std::find(ring.begin(), ring.end(), self.id);
    if (position != ring.end()) to = ring[static_cast<std::size_t>(position - ring.begin() + 1) % ring.size()];
  }
  return wan_link_between(plan, event.worker, to);
}

std::string wan_link_between(const Plan& plan, int from, int to) {
  const auto known = [&](int id) { return id >= 0 && static_cast<std::size_t>(id) < plan.workers.size(); };
  if (!known(from) || !known(to)) return {};
  const Worker& self = plan.workers[static_cast<std::size_t>(from)].worker;
  const Worker& peer = plan.workers[static_cast<std::size_t>(to)].worker;
  if (peer.dc == self.dc) return {};
  return emulator::pair_name(self.dc_name, peer.dc_name);
}

int skipped_iterations(int iterations) { return iterations > 1 ? 1 : 0; }

}  // namespace detail

namespace {

// One iteration's sums per worker, gathered in one pass over the events.
struct IterationTotals {
  std::vector<double> busy_ns;
  std::vector<double> blocked_ns;
  std::map<std::string, std::uint64_t> wan_bytes;
};

std::vector<IterationTotals> iteration_totals(const RunRecord& record, int iterations) {
  std::size_t workers = record.plan.workers.size();
  std::vector<IterationTotals> totals(
      static_cast<std::size_t>(iterations),
      IterationTotals{std::vector<double>(workers, 0), std::vector<double>(workers, 0), {}});
  for (const Event& event : record.events) {
    if (event.iteration < 0 || event.worker < 0 || static_cast<std::size_t>(event.worker) >= workers) continue;
    IterationTotals& sums = totals[static_cast<std::size_t>(event.iteration)];
    double length = static_cast<double>(event.end_ns - event.start_ns);
    auto worker = static_cast<std::size_t>(event.worker);
    if (detail::is_compute(event.kind)) sums.busy_ns[worker] += length;
    const bool waits = event.kind == OpKind::recv || event.kind == OpKind::allreduce_wait ||
                       (event.kind == OpKind::allreduce && !detail::overlapped(record.plan, event));
    if (waits) sums.blocked_ns[worker] += length;
    std::string link = detail::wan_link_of(record.plan, event);
    if (!link.empty()) sums.wan_bytes[link] += event.bytes;
  }
  return totals;
}

}  // namespace

std::vector<IterationSummary> summarize(const RunRecord& record) {
  const Plan& plan = record.plan;
  const Model& model = plan.experiment.model;
  std::size_t workers = plan.workers.size();
  // A DiLoCo iteration is an outer round of inner_steps training steps.
  double tokens = static_cast<double>(plan.experiment.parallel.dp) * model.microbatches * model.microbatch *
                  model.seq_len * steps_per_iteration(plan.experiment);
  int iterations = detail::iteration_count(record);
  std::vector<IterationTotals> totals = iteration_totals(record, iterations);
  std::vector<IterationSummary> summaries;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    const IterationTotals& sums = totals[static_cast<std::size_t>(iteration)];
    detail::IterationSpan span = detail::iteration_span(record, iteration);
    double wall_ns = static_cast<double>(span.end_ns - span.start_ns);
    IterationSummary summary;
    summary.index = iteration;
    summary.time_s = wall_ns / 1e9;
    summary.tokens_per_s = summary.time_s > 0 ? tokens / summary.time_s : 0;
    double utilization_sum = 0;
    double blocked_sum = 0;
    for (std::size_t worker = 0; worker < workers; ++worker) {
      double utilization = wall_ns > 0 ? sums.busy_ns[worker] / wall_ns : 0;
      summary.gpu_utilization.push_back(utilization);
      utilization_sum += utilization;
      blocked_sum += sums.blocked_ns[worker] / 1e9;
    }
    double count = workers == 0 ? 1 : static_cast<double>(workers);
    summary.mean_gpu_utilization = utilization_sum / count;
    summary.bubble_fraction = 1 - summary.mean_gpu_utilization;
    summary.network_blocked_s = blocked_sum / count;
    summary.wan_bytes.assign(sums.wan_bytes.begin(), sums.wan_bytes.end());
    summaries.push_back(std::move(summary));
  }
  return summaries;
}

RunSummary summarize_run(const std::vector<IterationSummary>& iterations) {
  RunSummary run;
  if (iterations.empty()) return run;
  run.skipped_iterations = detail::skipped_iterations(static_cast<int>(iterations.size()));
  auto first = iterations.begin() + run.skipped_iterations;
  double count = static_cast<double>(iterations.end() - first);
  for (auto iteration = first; iteration != iterations.end(); ++iteration) {
    run.mean_iteration_s += iteration->time_s / count;
    run.mean_gpu_utilization += iteration->mean_gpu_utilization / count;
    run.mean_bubble_fraction += iteration->bubble_fraction / count;
    run.mean_tokens_per_s += iteration->tokens_per_s / count;
  }
  return run;
}

StepFigures step_figures(const Experiment& experiment, const std::vector<IterationSummary>& iterations,
                         const RunSummary& run) {
  StepFigures figures;
  figures.steps_per_iteration = steps_per_iteration(experiment);
  const double steps = figures.steps_per_iteration;
  figures.mean_step_s = run.mean_iteration_s / steps;
  const auto counted = iterations.size() - std::min<std::size_t>(iterations.size(), run.skipped_iterations);
  if (counted == 0) return figures;
  double bytes = 0;
  for (auto it = iterations.begin() + run.skipped_iterations; it != iterations.end(); ++it)
    for (const auto& [link, sent] : it->wan_bytes) bytes += static_cast<double>(sent);
  figures.wan_bytes_per_step = bytes / static_cast<double>(counted) / steps;
  return figures;
}

std::int64_t first_iteration_ns(const RunRecord& record) {
  if (record.iteration_end_ns.empty() || record.iteration_start_ns.empty()) return 1'000'000'000;
  return std::max<std::int64_t>(1, record.iteration_end_ns[0] - record.iteration_start_ns[0]);
}

}  // namespace wanlab::harness
