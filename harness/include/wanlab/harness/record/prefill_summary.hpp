// What results.json, `wanlab train` and `wanlab compare` report of BubbleTea:
// utilization with prefill, requests, TTFT, KV bytes per WAN link, the bubble
// prediction's error and the training delay.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wanlab::harness {

struct RunRecord;

// p50 and p90 of the bubble prediction's |errors| at a window's start and in its length.
struct BubbleErrors {
  double start_p50 = 0, start_p90 = 0;
  double length_p50 = 0, length_p90 = 0;
  bool operator==(const BubbleErrors&) const = default;
};

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
  int unfinished = 0;  // admitted (or waiting) but not done when training ended
  // Of the served requests (base::percentile); none when nothing was served:
  // 0 would read as a perfect figure (results.json says null).
  std::optional<double> ttft_p50_s, ttft_p90_s, ttft_p99_s;
  std::vector<std::pair<std::string, std::uint64_t>> kv_bytes;  // per WAN link ("east->europe"), sorted
  // The bubble prediction's |errors| over every iteration, in seconds, and
  // each as a share of its predicted window's length (0.1: a tenth of the
  // bubble), which decides whether prefill placed there fits.
  BubbleErrors prediction_error_s;
  BubbleErrors prediction_error_relative;
  double training_delay_s = 0;  // training compute started late because prefill held the GPU
  bool operator==(const PrefillSummary&) const = default;
};
PrefillSummary summarize_prefill(const RunRecord& record);

}  // namespace wanlab::harness
