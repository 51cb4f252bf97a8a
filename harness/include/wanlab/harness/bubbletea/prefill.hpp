// BubbleTea: the prefill phase of LLM inference requests, run on the training
// GPUs inside the pipeline's bubbles. This header holds what both runners
// share and what needs neither kernel nor network:
//   - the experiment's [prefill] section (PrefillConfig, in Experiment),
//   - requests (a trace file or a seeded Poisson process),
//   - the served model's arithmetic (prefill time, KV cache bytes, memory),
//   - bubble prediction (a GPU's idle windows in the next iteration),
//   - admission (batches of requests placed into predicted windows).
// The real run (run.hpp) and the simulator (simulate.hpp) both fill a
// PrefillRecord (record.hpp) through these. docs/HARNESS.md has the formulas.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wanlab::harness {

struct Experiment;
struct Plan;
struct RunRecord;

// KV caches on a DC's own link (decode in the training DC, on another host)
// go in pieces of about kDcKvPieceSeconds and leave the link to training:
// a training send between two hosts of the DC holds it from
// kAnnounceLeadNs before the compute it follows ends (the real run announces
// it then, LinkGate) until its bytes have left. The lead is longer than a
// piece, so that the piece on the link (and what waits in its sockets) is
// gone when the send's bytes come; the shorter both, the less of the link
// goes unused between them, and the more grants a second.
inline constexpr double kDcKvPieceSeconds = 0.003;
inline constexpr std::int64_t kAnnounceLeadNs = 5'000'000;

// The served model (Llama-2-70B by default; REFERENCES.md, splitwise-sim).
struct ServedModel {
  int layers = 80;
  int hidden = 8192;
  int kv_heads = 8;
  int head_dim = 128;
  int bytes_per_value = 2;
  // 0: 12 x layers x hidden^2 (like the training model; for Llama-2-70B's
  // shape that is 64e9, the published 69e9 includes embeddings and the wider MLP).
  double parameters = 0;
};

// A Poisson arrival process with lognormal prompt lengths (median and p90
// give mu and sigma); output lengths do not matter to prefill.
struct ArrivalProcess {
  double rate_per_s = 0;
  double prompt_median = 0;
  double prompt_p90 = 0;
  std::uint64_t seed = 0;  // 0: the experiment's seed
};

// decode_dc = "local": every worker's KV caches go to a decode host in the
// worker's own DC (no DC of a testbed may be called that for this reason).
inline constexpr std::string_view kDecodeLocal = "local";

struct PrefillConfig {
  bool enabled = false;
  // Exactly one of a trace file (resolved against the experiment file's
  // directory) or an arrival process when enabled.
  std::string requests_path;
  std::optional<ArrivalProcess> arrivals;
  std::string decode_dc;  // a DC of the testbed, or kDecodeLocal
  bool decode_local() const { return decode_dc == kDecodeLocal; }
  std::uint64_t ttft_slo_ns = 3'000'000'000;
  int max_batch_tokens = 8192;
  std::uint64_t guard_ns = 5'000'000;  // kept free before the next predicted training op
  ServedModel model;
  // Prefill time of one worker (a GPU group of tp GPUs) against batched prompt
  // tokens, interpolated linearly (extrapolated from the last two points).
  // Empty: derived from FLOPs, 2N per token at tp x [compute] peak x mfu.
  std::vector<double> time_tokens;
  std::vector<double> time_ms;
  // Requests beyond this many are not read (a bound on a run's memory).
  static constexpr std::size_t kMaxRequests = 1'000'000;
};

// ---- requests ---------------------------------------------------------------

struct Request {
  int id = 0;                   // index in arrival order
  std::int64_t arrival_ns = 0;  // since the run's origin (the first iteration's start)
  int prompt_tokens = 0;
  int output_tokens = 0;
};

// A trace file: "arrival_s,prompt_tokens,output_tokens" per line, an optional
// header line, '#' comments; arrivals non-decreasing. Errors name file:line
// (ExperimentError).
std::vector<Request> parse_request_trace(std::string_view text, const std::string& path);
// The requests of a run of `horizon_ns`: the trace's (read through
// base::read_regular_file) or the arrival process's, seeded.
std::vector<Request> load_requests(const Experiment& experiment, std::int64_t horizon_ns);

// ---- the served model's arithmetic --------------------------------------------

// One worker's prefill time of a batch of `tokens` prompt tokens, all layers.
std::uint64_t prefill_ns(const Experiment& experiment, int tokens);
// KV cache of one prompt token at full size: 2 x layers x kv_heads x head_dim x bytes.
std::uint64_t kv_bytes_per_token(const ServedModel& model);
// What is sent to the decode host for `tokens` prompt tokens: x scale, at least 1.
std::uint64_t kv_message_bytes(const Experiment& experiment, int tokens);

// Per GPU, in bytes; docs/HARNESS.md says how each is estimated.
struct MemoryEstimate {
  double training_weights = 0;  // stage parameters x bytes / tp
  double training_gradients = 0;
  double training_optimizer = 0;    // Adam: fp32 master, m, v = 12 bytes per parameter / tp
  double training_activations = 0;  // activations in flight under the schedule / tp
  double served_weights = 0;        // served parameters x bytes / tp
  double kv_batch = 0;              // max_batch_tokens x kv_bytes_per_token / tp
  double capacity = 0;              // [gpus] memory_gb
  double total() const;
};
MemoryEstimate estimate_memory(const Experiment& experiment);
// Throws ExperimentError naming [prefill] and how many GB are missing when the
// estimate exceeds the capacity (only with prefill enabled).
void check_memory(const Experiment& experiment);

// ---- bubble prediction ----------------------------------------------------------

// A span of one worker's GPU time, in ns since the run's origin.
struct Window {
  int worker = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// The training schedule repeats every iteration: the idle windows of every
// worker's GPU in iteration `iteration` of `record` (gaps between its forward
// and backward events, and from its last compute to the iteration's end),
// as offsets from that iteration's start. Per worker, in time order.
std::vector<std::vector<Window>> idle_offsets(const RunRecord& record, int iteration);
// Those offsets placed at `iteration_start_ns`: the prediction of the next
// iteration's windows. Windows shorter than `min_ns` are dropped.
std::vector<Window> predict_windows(const std::vector<std::vector<Window>>& offsets, std::int64_t iteration_start_ns,
                                    std::int64_t min_ns = 0);

// Predicted against actual, one error per predicted window: matched with the
// actual window of its worker that overlaps it most, or with none overlapping,
// the one starting nearest; errors in ns. A worker without any actual window
// gives start error 0 and length error -(predicted length).
struct PredictionError {
  int worker = 0;
  int iteration = 0;
  std::int64_t start_error_ns = 0;   // actual start - predicted start
  std::int64_t length_error_ns = 0;  // actual length - predicted length
};
std::vector<PredictionError> prediction_errors(const std::vector<Window>& predicted,
                                               const std::vector<std::vector<Window>>& actual_offsets,
                                               std::int64_t iteration_start_ns, int iteration);

// ---- admission --------------------------------------------------------------

// A piece of a batch's prefill on one worker: layers [first_layer, end_layer)
// in [start_ns, start_ns + duration_ns). A batch that no single window holds
// may be split into layer chunks over several windows of one worker.
struct Chunk {
  int worker = 0;
  std::int64_t start_ns = 0;
  std::uint64_t duration_ns = 0;
  int first_layer = 0;
  int end_layer = 0;
};

struct Batch {
  int id = 0;
  std::vector<int> requests;  // Request ids
  int tokens = 0;
  std::vector<Chunk> chunks;                  // in time order, all on one worker
  std::uint64_t kv_bytes = 0;                 // kv_message_bytes(tokens)
  std::int64_t predicted_first_token_ns = 0;  // last chunk's end + KV transfer estimate
};

struct Rejection {
  int request = 0;
  std::int64_t at_ns = 0;
  std::string reason;  // "TTFT SLO of 3 s cannot be met", "prompt longer than ..."
};

// KV transfer time estimate from `worker` to the decode DC for `bytes`
// (delay + bytes / rate of the pair, scaled). Given by the runner.
using KvEstimate = std::function<std::int64_t(int worker, std::uint64_t bytes)>;

// Places requests, in arrival order, into predicted windows.
// - Batches: FIFO. A batch takes the first waiting request and those after it
//   while the tokens stay within max_batch_tokens (a longer prompt is a batch
//   alone). If that batch cannot be placed, its longest placeable prefix is
//   (a binary search: fewer requests never place worse); if not even its first
//   request can, that request keeps waiting for a later prediction and the
//   next one heads a batch.
// - Placement: a chunk lies in [max(window start, now), window end - guard).
//   The batch goes to the single window, of any worker, where its first token
//   (prefill end + kv_estimate(worker, kv_bytes)) comes earliest. Only if no
//   single window holds it is it split into layer chunks: whole layers, filled
//   greedily into that worker's windows in time order (windows too short for
//   one layer are skipped), on the one worker where the last chunk's first
//   token comes earliest. Layers [f, e) of a prefill of P ns over L layers take
//   ceil(P e / L) - ceil(P f / L): each chunk at most 1 ns over its share, and
//   the chunks sum to P exactly.
// - Admitted only if the first token is within ttft_slo of every request's arrival.
// - Rejected, at a schedule() call, is a waiting request for which
//   now + prefill_ns(its prompt) + the least kv_estimate over the workers
//   passes arrival + ttft_slo: even alone, on an idle GPU, it is too late.
// - Used window time is consumed: what is left of a window is the part after
//   the chunk. A worker's windows must not overlap each other.
// Cost: one pass over the windows, sorted by start, per placement attempt,
// stopping at the first window that can no longer beat the best placement
// found or meet the deadline.
class Admission {
 public:
  // Keeps a pointer to `experiment`: it must outlive the Admission.
  Admission(const Experiment& experiment, KvEstimate kv_estimate);

  void arrive(const Request& request);
  // The windows from `now_ns` on (consumed as batches take them: the caller
  // keeps passing the same vector until it gives a new prediction). Windows
  // with no room left are removed and the rest sorted by start.
  struct Decisions {
    std::vector<Batch> batches;
    std::vector<Rejection> rejections;
  };
  Decisions schedule(std::int64_t now_ns, std::vector<Window>& windows);
  std::size_t waiting() const;

 private:
  struct Waiting {
    Request request;
    std::int64_t best_case_ns = 0;  // prefill alone + the least KV estimate
  };
  int workers() const;
  std::vector<std::int64_t> kv_times(int tokens) const;  // kv_estimate per worker
  void reject_hopeless(std::int64_t now_ns, std::vector<Rejection>& rejections);
  std::size_t batch_end(std::size_t head) const;
  std::optional<Batch> try_place(std::size_t head, std::size_t end, std::int64_t now_ns,
                                 const std::vector<Window>& windows, std::vector<Window>* consume_from);
  std::optional<Batch> place_longest(std::size_t head, std::size_t end, std::int64_t now_ns,
                                     std::vector<Window>& windows);

  const Experiment* experiment_;
  KvEstimate kv_estimate_;
  std::vector<Waiting> waiting_;  // in arrival order
  int next_batch_ = 0;
};

// ---- outcome ------------------------------------------------------------------

// Summary of a run's PrefillRecord (record.hpp), over the iterations that
// summarize_run uses (after the first unless there is only one). Like
// summarize_run, utilization is a mean over those iterations of per-iteration
// ratios; prefill counts only within an iteration's bounds.
struct PrefillSummary {
  std::vector<double> gpu_utilization;   // per worker: (training compute + prefill spans) / wall
  double mean_gpu_utilization = 0;       // with prefill: the mean of gpu_utilization
  double mean_training_utilization = 0;  // training only (RunSummary's mean_gpu_utilization)
  double prefill_tokens_per_s = 0;       // prompt tokens of served requests whose first token came within
                                         // those iterations / their wall time
  // Counts over every request of the record, not only those iterations.
  int requests = 0;  // arrived during the run
  int served = 0;
  int rejected = 0;
  int failed = 0;
  int unfinished = 0;                                     // admitted (or waiting) but not done when training ended
  // Of the served requests (base::percentile); none when nothing was served:
  // 0 would read as a perfect figure (results.json says null).
  std::optional<double> ttft_p50_s, ttft_p90_s, ttft_p99_s;
  std::vector<std::pair<std::string, std::uint64_t>> kv_bytes;                // per WAN link ("east->europe"), sorted
  double prediction_start_error_p50_s = 0, prediction_start_error_p90_s = 0;  // |error|, every iteration
  double prediction_length_error_p50_s = 0, prediction_length_error_p90_s = 0;
  double training_delay_s = 0;  // training compute started late because prefill held the GPU
  bool operator==(const PrefillSummary&) const = default;
};
PrefillSummary summarize_prefill(const RunRecord& record);

}  // namespace wanlab::harness
