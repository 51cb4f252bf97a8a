// The served model's arithmetic, which both runners and the planner use:
// a batch's prefill time, KV cache bytes, and the memory a GPU needs
// (docs/BUBBLETEA.md has the formulas).
#pragma once

#include <cstdint>

#include "wanlab/harness/experiment/prefill.hpp"

namespace wanlab::harness {

struct Experiment;

// One worker's prefill time of a batch of `tokens` prompt tokens, all layers.
std::uint64_t prefill_ns(const Experiment& experiment, int tokens);
// KV cache of one prompt token at full size: 2 x layers x kv_heads x head_dim x bytes.
std::uint64_t kv_bytes_per_token(const ServedModel& model);
// What is sent to the decode host for `tokens` prompt tokens: x scale, at least 1.
std::uint64_t kv_message_bytes(const Experiment& experiment, int tokens);

// What one GPU of a pipeline stage holds, in bytes: the one memory rule that
// `wanlab train` checks and `wanlab plan` keeps its candidates by. The served
// model's terms count only with [prefill] enabled. docs/BUBBLETEA.md says
// how each is estimated.
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
// Whether the estimate is within the capacity.
bool fits_memory(const Experiment& experiment);
// Throws ExperimentError saying what does not fit and by how many GB (naming
// [parallel], or [prefill] when it is on) when the estimate exceeds the capacity.
void check_memory(const Experiment& experiment);

}  // namespace wanlab::harness
