// BubbleTea's section of an experiment, [prefill] (read by
// src/experiment/prefill_config.cpp; docs/BUBBLETEA.md has the keys): the
// served model, where requests come from, where their KV caches go, and the
// limits admission keeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wanlab/harness/experiment/fabric.hpp"

namespace wanlab::harness {

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
  // A KV cache from a worker on its decode host itself goes to the decode
  // GPUs inside the server (NVLink), not over the emulated network: per GPU of
  // the worker's tp group, as [fabric]'s nvlink_rate. Real runs time it at
  // tp x this x scale instead of sending its bytes through the box's CPU.
  double intra_host_bps = Fabric{}.nvlink_bps;
  ServedModel model;
  // Prefill time of one worker (a GPU group of tp GPUs) against batched prompt
  // tokens, interpolated linearly (extrapolated from the last two points).
  // Empty: derived from FLOPs, 2N per token at tp x [compute] peak x mfu.
  std::vector<double> time_tokens;
  std::vector<double> time_ms;
  // Requests beyond this many are not read (a bound on a run's memory).
  static constexpr std::size_t kMaxRequests = 1'000'000;
  // The most tokens of a prompt, a batch or a prefill-time table's point.
  static constexpr int kMaxTokens = 1'000'000;
};

}  // namespace wanlab::harness
