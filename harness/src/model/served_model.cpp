// The served model's arithmetic: prefill time, KV cache sizes and the memory a
// GPU needs to train and serve at once. No kernel, no network.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "experiment/prefill_config.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/experiment/prefill.hpp"
#include "wanlab/harness/model/served_model.hpp"

namespace wanlab::harness {
namespace {

// "80 GB" is decimal here; GPUs sold as 80 GB hold 80 GiB, so the estimate
// keeps about 7% for the CUDA context, the allocator's fragmentation and
// kernel workspaces, which it does not count.
constexpr double kBytesPerGb = 1e9;
// Adam in mixed precision: an fp32 master copy of each weight plus fp32 first
// and second moments (Rajbhandari et al. 2020, ZeRO, section 3.1: K = 12).
constexpr double kOptimizerBytesPerParameter = 12;
// Activations a transformer layer keeps for its backward, per token and hidden
// unit at 2 bytes per value: 34 bytes with tensor and sequence parallelism
// divided over tp, attention scores not kept (flash attention drops the
// 5as/h term). Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models", section 4.1 and table 2.
constexpr double kActivationValuesPerLayer = 34.0 / 2;

double served_parameters(const ServedModel& model) {
  if (model.parameters > 0) return model.parameters;
  return 12.0 * model.layers * static_cast<double>(model.hidden) * model.hidden;
}

// The table's time at `tokens`: linear between its points; beyond the last,
// the line through the last two (prefill of a large batch is compute-bound,
// so its time grows linearly); below the first, the first point's time (a
// forward pass reads every weight however few its tokens: Llama-2-70B's
// 128-token prefill, 48 ms on H100, is close to a 1-token decode step, 37 ms;
// REFERENCES.md, splitwise-sim).
double table_ms(const std::vector<double>& tokens, const std::vector<double>& ms, double at) {
  if (at <= tokens.front()) return ms.front();
  auto upper = std::upper_bound(tokens.begin(), tokens.end(), at);
  std::size_t high = upper == tokens.end() ? tokens.size() - 1 : static_cast<std::size_t>(upper - tokens.begin());
  std::size_t low = high - 1;
  double slope = (ms[high] - ms[low]) / (tokens[high] - tokens[low]);
  return ms[low] + slope * (at - tokens[low]);
}

// 2N FLOPs per prompt token on tp GPUs at [compute] peak x mfu.
double flops_ns(const Experiment& experiment, int tokens) {
  const Compute& compute = experiment.compute;
  double flops_per_s = experiment.parallel.tp * compute.peak_tflops.value_or(0) * 1e12 * compute.mfu.value_or(0);
  if (!(flops_per_s > 0)) return 0;
  return 2 * served_parameters(experiment.prefill.model) * tokens / flops_per_s * 1e9;
}

// The microbatches stage 0 (the worst) holds activations for at once: GPipe
// runs every forward before any backward; 1F1B (and Atlas, which runs it)
// keeps at most pp - stage in flight.
int microbatches_in_flight(const Experiment& experiment) {
  int m = experiment.model.microbatches;
  if (experiment.schedule == Schedule::gpipe) return m;
  return std::min(experiment.parallel.pp, m);
}

// Bytes of one microbatch's activations a stage keeps, on one GPU of its tp.
// Without recompute, every layer's (Korthikanti et al. 2022, table 2); with
// full recompute, only each layer's input (s x b x h values, their eq. 6)
// plus the one layer being recomputed.
double activation_bytes_per_microbatch(const Experiment& experiment) {
  const Model& model = experiment.model;
  double layer_input = static_cast<double>(model.seq_len) * model.microbatch * model.hidden * model.bytes_per_value;
  double layers = static_cast<double>(model.layers) / experiment.parallel.pp;
  double per_layer = kActivationValuesPerLayer * layer_input;
  double bytes = experiment.compute.recompute ? layers * layer_input + per_layer : layers * per_layer;
  return bytes / experiment.parallel.tp;
}

double gb(double bytes) { return bytes / kBytesPerGb; }

double training_bytes(const MemoryEstimate& estimate) {
  return estimate.training_weights + estimate.training_gradients + estimate.training_optimizer +
         estimate.training_activations;
}

}  // namespace

std::uint64_t prefill_ns(const Experiment& experiment, int tokens) {
  if (tokens <= 0) return 0;
  const PrefillConfig& prefill = experiment.prefill;
  double ns = prefill.time_tokens.empty() ? flops_ns(experiment, tokens)
                                          : table_ms(prefill.time_tokens, prefill.time_ms, tokens) * 1e6;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(ns)));
}

std::uint64_t kv_bytes_per_token(const ServedModel& model) {
  return 2ull * static_cast<std::uint64_t>(model.layers) * static_cast<std::uint64_t>(model.kv_heads) *
         static_cast<std::uint64_t>(model.head_dim) * static_cast<std::uint64_t>(model.bytes_per_value);
}

std::uint64_t kv_message_bytes(const Experiment& experiment, int tokens) {
  double bytes =
      static_cast<double>(kv_bytes_per_token(experiment.prefill.model)) * std::max(tokens, 0) * experiment.scale;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(bytes)));
}

double MemoryEstimate::total() const {
  return training_weights + training_gradients + training_optimizer + training_activations + served_weights + kv_batch;
}

// At full size: `scale` shrinks only what crosses the emulated network.
MemoryEstimate estimate_memory(const Experiment& experiment) {
  const Model& model = experiment.model;
  const ServedModel& served = experiment.prefill.model;
  double tp = experiment.parallel.tp;
  double stage_parameters = parameter_count(model) / experiment.parallel.pp;
  MemoryEstimate estimate;
  estimate.training_weights = stage_parameters * model.bytes_per_value / tp;
  estimate.training_gradients = estimate.training_weights;
  estimate.training_optimizer = stage_parameters * kOptimizerBytesPerParameter / tp;
  estimate.training_activations = microbatches_in_flight(experiment) * activation_bytes_per_microbatch(experiment);
  if (experiment.prefill.enabled) {
    estimate.served_weights = served_parameters(served) * served.bytes_per_value / tp;
    estimate.kv_batch =
        static_cast<double>(experiment.prefill.max_batch_tokens) * static_cast<double>(kv_bytes_per_token(served)) / tp;
  }
  estimate.capacity = experiment.gpu_memory_gb * kBytesPerGb;
  return estimate;
}

bool fits_memory(const Experiment& experiment) {
  const MemoryEstimate estimate = estimate_memory(experiment);
  return estimate.total() <= estimate.capacity;
}

void check_memory(const Experiment& experiment) {
  MemoryEstimate estimate = estimate_memory(experiment);
  double total = estimate.total();
  if (total <= estimate.capacity) return;
  // Every term is divided over tp: the tp that fits follows directly.
  double at_tp1 = total * experiment.parallel.tp;
  // A double, not an int: a huge model on a tiny memory_gb asks for more than
  // any int holds, or for infinity (found by the experiment fuzzer).
  const double tp_needed = std::ceil(at_tp1 / estimate.capacity);
  if (!experiment.prefill.enabled) {
    throw ExperimentError(fmt::format(
        "{}: a pipeline stage does not fit in {:g} GB per GPU: weights {:.1f} + gradients {:.1f} + optimizer "
        "{:.1f} + activations {:.1f} GB = {:.1f} GB ({:.1f} GB too many); use tp >= {}, more stages (pp) or "
        "[gpus] memory_gb",
        experiment.where("parallel"), experiment.gpu_memory_gb, gb(estimate.training_weights),
        gb(estimate.training_gradients), gb(estimate.training_optimizer), gb(estimate.training_activations), gb(total),
        gb(total - estimate.capacity), tp_needed));
  }
  throw ExperimentError(fmt::format(
      "{}: prefill: does not fit in {:g} GB per GPU: training {:.1f} GB (weights {:.1f}, gradients {:.1f}, "
      "optimizer {:.1f}, activations {:.1f}) + served weights {:.1f} GB + KV of a batch {:.1f} GB = {:.1f} GB "
      "({:.1f} GB too many); use tp >= {} or a smaller served model or max_batch_tokens",
      detail::prefill_where(experiment), experiment.gpu_memory_gb, gb(training_bytes(estimate)),
      gb(estimate.training_weights), gb(estimate.training_gradients), gb(estimate.training_optimizer),
      gb(estimate.training_activations), gb(estimate.served_weights), gb(estimate.kv_batch), gb(total),
      gb(total - estimate.capacity), tp_needed));
}

}  // namespace wanlab::harness
