// What a run produced: timestamped events per worker, from the real workers
// or from the simulator, and the summaries made from them (the files a run
// writes are report/'s).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/record/health.hpp"
#include "wanlab/harness/record/slowdown.hpp"
#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness {

// One executed op. forward/backward: the compute. recv: from reaching the op to
// the message being there (its length is time blocked on the network).
// allreduce: from joining to the ring being done. send: from handing the
// message over to its arrival at the peer (the worker does not wait for it).
struct Event {
  int worker = 0;
  int iteration = 0;
  int op_index = 0;  // index into the worker's ops
  OpKind kind = OpKind::forward;
  int microbatch = -1;
  int peer = -1;
  std::uint64_t bytes = 0;
  std::int64_t start_ns = 0;  // since the run's origin
  std::int64_t end_ns = 0;
  bool cross_dc = false;
  // Real runs, compute only: how long prefill holding the GPU put its start
  // off, and how late after its end the worker's timer woke (the emulation's
  // own lag: whatever follows starts that much later). 0 when simulated.
  std::int64_t gpu_wait_ns = 0;
  std::int64_t wake_late_ns = 0;
};

// One TCP stream's part in a transfer (real runs): the payload bytes it
// carried, and its congestion window (segments) and smoothed RTT (TCP_INFO's
// tcpi_snd_cwnd, tcpi_rtt) when the message's first chunk was taken.
struct StreamAtStart {
  int stream = 0;  // the connection's index in its channel
  std::uint64_t bytes = 0;
  std::uint32_t cwnd = 0;
  std::uint32_t srtt_us = 0;
  std::uint32_t retransmitted = 0;  // segments the stream had retransmitted since it opened (tcpi_total_retrans)
};

// One cross-DC message of a send op, from the sender's queue to the
// receiver's last byte; its link follows from the two workers' DCs. Times are ns since the run's origin, like Event's:
// queued (the send op was reached; with temporal sharing, before the gate),
// first and last byte handed to a socket (simulator: on and off the wire),
// first chunk read and whole message received (simulator: one pair delay
// after first and last sent). The simulator has no streams.
struct TransferRecord {
  int worker = 0;  // the sender
  int iteration = 0;
  int op_index = 0;  // the sender's send op
  int peer = 0;
  int microbatch = -1;
  std::uint64_t bytes = 0;  // scaled; from the decode host timed at NVLink's rate, not sent
  std::int64_t queued_ns = 0;
  std::int64_t first_sent_ns = 0;
  std::int64_t last_sent_ns = 0;
  std::int64_t first_received_ns = 0;
  std::int64_t last_received_ns = 0;
  std::vector<StreamAtStart> streams;
};

// Iteration `index` runs from iteration_start_ns to iteration_end_ns (wall).
struct IterationSummary {
  int index = 0;
  double time_s = 0;
  double tokens_per_s = 0;
  std::vector<double> gpu_utilization;  // per worker: compute busy / iteration wall
  double mean_gpu_utilization = 0;
  double bubble_fraction = 0;    // 1 - mean utilization
  double network_blocked_s = 0;  // mean per worker of time waiting in recv/allreduce
  // Bytes sent over each directed WAN link ("east->west") as sent (scaled):
  // cross-DC sends, and each worker's all-reduce bytes on the link to its ring
  // successor. Sorted by link name.
  std::vector<std::pair<std::string, std::uint64_t>> wan_bytes;
  bool operator==(const IterationSummary&) const = default;
};

// BubbleTea's side of a run (both runners fill it when [prefill] is enabled).
// Times are ns since the run's origin, like Event's.
struct PrefillSpan {  // one chunk of a batch's prefill, on a worker's GPU
  int worker = 0;
  int batch = 0;
  int chunk = 0;
  int tokens = 0;
  int first_layer = 0;
  int end_layer = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

struct KvTransfer {  // a batch's KV cache to the decode host
  int batch = 0;
  int worker = 0;           // whose GPU computed it
  std::string link;         // "east->europe"; empty when it stayed in the DC
  std::uint64_t bytes = 0;  // scaled; from the decode host timed at NVLink's rate, not sent
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;  // fully arrived at the decode host
  // What admission promised: the first token it predicted at placement, and
  // the batch's deadline (its earliest arrival + the TTFT SLO); -1 if unknown.
  std::int64_t predicted_end_ns = -1;
  std::int64_t deadline_ns = -1;
};

enum class RequestState { served, rejected, failed, unfinished };

struct RequestOutcome {
  int id = 0;
  std::int64_t arrival_ns = 0;
  int prompt_tokens = 0;
  RequestState state = RequestState::unfinished;
  int batch = -1;
  std::int64_t first_token_ns = -1;  // served: the KV cache fully arrived (TTFT = this - arrival)
  std::string reason;                // rejected / failed: why
};

struct PrefillRecord {
  std::vector<PrefillSpan> spans;
  std::vector<KvTransfer> kv;
  std::vector<RequestOutcome> requests;  // every request that arrived during the run, by id
  std::vector<PredictionError> prediction;
  // Per worker: ns its training compute started later than it asked because
  // prefill held the GPU (a prediction that was wrong).
  std::vector<std::int64_t> training_delay_ns;
  std::vector<std::string> notes;  // what happened ("prefill worker 3 died: ...; 4 requests failed")
};

std::string to_string(RequestState state);

// RunRecord::runtime of a simulated run.
inline constexpr const char* kSimulatorRuntime = "simulator";

struct RunRecord {
  Plan plan;
  std::string runtime;         // which container runtime ran the workers ("podman", "sandbox", "simulator")
  std::string runtime_detail;  // its version, or why podman was not used ("" when simulated)
  std::vector<Event> events;
  std::vector<std::int64_t> iteration_start_ns;  // per iteration, since the origin
  std::vector<std::int64_t> iteration_end_ns;
  std::optional<PrefillRecord> prefill;  // set when the experiment's [prefill] is enabled
  // Cross-DC messages of send ops, as this runner moved them.
  std::vector<TransferRecord> transfers;
  // A real run: the simulator's transfers for the same plan and iterations,
  // to report beside the measured ones. Empty for the simulator itself.
  std::vector<TransferRecord> simulated_transfers;
  // A real run: what it measured about its own emulation (none when simulated).
  std::optional<EmulationSamples> emulation;
  // A real run: its iterations against the same plan simulated, and why they differ.
  std::optional<TrainingSlowdown> slowdown;
};

std::vector<IterationSummary> summarize(const RunRecord& record);
// Iteration 0's length (at least 1 ns), or 1 s for a record without one: a
// plan's simulated iteration, as BubbleTea sizes its horizon and KV pieces by it.
std::int64_t first_iteration_ns(const RunRecord& record);

// What results.json reports as mean_iteration_s and mean_gpu_utilization: the
// mean over the iterations after the first (the first includes connection set-up
// in a real run), or over the only one.
struct RunSummary {
  double mean_iteration_s = 0;
  double mean_gpu_utilization = 0;
  double mean_bubble_fraction = 0;
  double mean_tokens_per_s = 0;
  int skipped_iterations = 0;
  bool operator==(const RunSummary&) const = default;
};
RunSummary summarize_run(const std::vector<IterationSummary>& iterations);

// The means per training step: a DiLoCo iteration is an outer round of
// [diloco] inner_steps steps, any other iteration one step.
struct StepFigures {
  int steps_per_iteration = 1;
  double mean_step_s = 0;         // mean_iteration_s / steps_per_iteration
  double wan_bytes_per_step = 0;  // over every WAN link, the iterations the means count
  bool operator==(const StepFigures&) const = default;
};
StepFigures step_figures(const Experiment& experiment, const std::vector<IterationSummary>& iterations,
                         const RunSummary& run);

// Order statistics of one set of transfers on one link.
struct TransferPercentiles {
  std::size_t messages = 0;
  double p50_s = 0, p90_s = 0, p99_s = 0;  // 0 without messages
  bool operator==(const TransferPercentiles&) const = default;
};
struct TransferTimes {
  TransferPercentiles transfer;  // first byte sent -> last byte received
  TransferPercentiles wait;      // queued -> first byte sent
  // Measured only: segments the link's streams retransmitted between the
  // starts of the first and the last message counted (TCP_INFO at each start).
  std::optional<std::uint64_t> retransmitted_segments;
  bool operator==(const TransferTimes&) const = default;
};
// Per directed WAN link, over the iterations the run's means use
// (summarize_run): a real run's measured transfers, and the simulator's
// (a simulator run's own, or a real run's simulated_transfers).
struct LinkTransfers {
  std::string link;
  std::optional<TransferTimes> measured;
  std::optional<TransferTimes> simulated;
  bool operator==(const LinkTransfers&) const = default;
};
std::vector<LinkTransfers> summarize_transfers(const RunRecord& record);

}  // namespace wanlab::harness
