// What a run produced: timestamped events per worker, from the real workers
// or from the simulator, and the reports made from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wanlab/harness/plan.hpp"

namespace wanlab::harness {

// One executed op. forward/backward: the compute. recv: from reaching the op to
// the message being there (its length is time blocked on the network).
// allreduce: from joining to the ring being done. send: from handing the
// message over to its arrival at the peer (the worker does not wait for it).
struct Event {
  int worker = 0;
  int iteration = 0;
  int op_index = 0;          // index into the worker's ops
  OpKind kind = OpKind::forward;
  int microbatch = -1;
  int peer = -1;
  std::uint64_t bytes = 0;
  std::int64_t start_ns = 0;  // since the run's origin
  std::int64_t end_ns = 0;
  bool cross_dc = false;
};

// Iteration `index` runs from iteration_start_ns to iteration_end_ns (wall).
struct IterationSummary {
  int index = 0;
  double time_s = 0;
  double tokens_per_s = 0;
  std::vector<double> gpu_utilization;  // per worker: compute busy / iteration wall
  double mean_gpu_utilization = 0;
  double bubble_fraction = 0;           // 1 - mean utilization
  double network_blocked_s = 0;         // mean per worker of time waiting in recv/allreduce
  // Bytes sent over each directed WAN link ("east->west") as sent (scaled):
  // cross-DC sends, and each worker's all-reduce bytes on the link to its ring
  // successor. Sorted by link name.
  std::vector<std::pair<std::string, std::uint64_t>> wan_bytes;
};

struct RunRecord {
  Plan plan;
  std::string runtime;   // which container runtime ran the workers ("podman", "sandbox", "simulator")
  std::vector<Event> events;
  std::vector<std::int64_t> iteration_start_ns;  // per iteration, since the origin
  std::vector<std::int64_t> iteration_end_ns;
};

std::vector<IterationSummary> summarize(const RunRecord& record);

// What results.json reports as mean_iteration_s and mean_gpu_utilization: the
// mean over the iterations after the first (the first includes connection set-up
// in a real run), or over the only one.
struct RunSummary {
  double mean_iteration_s = 0;
  double mean_gpu_utilization = 0;
  double mean_bubble_fraction = 0;
  double mean_tokens_per_s = 0;
  int skipped_iterations = 0;
};
RunSummary summarize_run(const std::vector<IterationSummary>& iterations);

// results.json: mean_iteration_s, mean_gpu_utilization, runtime, iterations
// [...], the full configuration, scenario text, versions and seed.
void write_results_json(const RunRecord& record, const std::string& scenario_text, const std::string& path);
// trace.json: Chrome trace events, one track per GPU and per WAN link.
void write_trace_json(const RunRecord& record, const std::string& path);
// timeline.svg: Gantt chart of one iteration, rows grouped by DC, with a legend.
void write_timeline_svg(const RunRecord& record, int iteration, const std::string& path);
// The same documents as strings (the writers above write these to `path` and
// throw std::runtime_error naming the path when that fails).
std::string results_json(const RunRecord& record, const std::string& scenario_text);
std::string trace_json(const RunRecord& record);
std::string timeline_svg(const RunRecord& record, int iteration);

}  // namespace wanlab::harness
