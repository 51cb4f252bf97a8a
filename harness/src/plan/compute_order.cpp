// Per-stage compute orders: GPipe and 1F1B (Atlas and DiLoCo's inner steps run 1F1B).
#include <fmt/format.h>

#include <algorithm>

#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness {

std::vector<ComputeStep> compute_steps(Schedule schedule, int stages, int microbatches, int stage) {
  std::vector<ComputeStep> steps;
  steps.reserve(static_cast<std::size_t>(2 * microbatches));
  if (schedule == Schedule::gpipe) {
    for (int k = 0; k < microbatches; ++k) steps.push_back({true, k});
    for (int k = 0; k < microbatches; ++k) steps.push_back({false, k});
    return steps;
  }
  // 1F1B: fill the pipeline below this stage, then alternate so that at most
  // p - s microbatches are in flight here, then drain.
  int warmup = std::clamp(stages - stage - 1, 0, microbatches);
  for (int k = 0; k < warmup; ++k) steps.push_back({true, k});
  for (int k = 0; k < microbatches - warmup; ++k) {
    steps.push_back({true, warmup + k});
    steps.push_back({false, k});
  }
  for (int k = microbatches - warmup; k < microbatches; ++k) steps.push_back({false, k});
  return steps;
}

std::vector<std::string> compute_order(Schedule schedule, int stages, int microbatches, int stage) {
  std::vector<std::string> order;
  for (const ComputeStep& step : compute_steps(schedule, stages, microbatches, stage)) {
    order.push_back(fmt::format("{}{}", step.forward ? 'F' : 'B', step.microbatch));
  }
  return order;
}

std::string to_string(OpKind kind) {
  switch (kind) {
    case OpKind::forward: return "forward";
    case OpKind::backward: return "backward";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::allreduce: return "allreduce";
    case OpKind::allreduce_wait: return "allreduce_wait";
  }
  return "?";
}

std::string allreduce_name(const Experiment& experiment, int number) {
  if (number < 0 || !is_diloco(experiment.schedule)) return "all-reduce";
  const Diloco& diloco = experiment.diloco;
  if (number < diloco.inner_steps) return fmt::format("in-DC all-reduce, step {}", number);
  return fmt::format("outer sync, fragment {} of {}", number - diloco.inner_steps + 1, diloco.fragments);
}

}  // namespace wanlab::harness
