// How much longer a real run's iterations took than its plan, and why: the
// measured slowdown, attributed along each iteration's critical path, which
// results.json carries as "slowdown" and `wanlab train` prints.
//
// The plan is the simulator on the same plan (training alone: no prefill, no
// emulator overhead). Each iteration's critical path is walked back from its
// last event: a compute op leads back to the worker's previous op; a receive
// that waited leads to the send it waited for, and from that send to the
// sender's op before it. Every piece of the path is measured against its
// planned length, and its excess goes to one cause:
//   gpu_held    a compute op started late because prefill held the GPU
//               (its own recorded wait, Event::gpu_wait_ns);
//   wake_ups    the worker's timer woke late after the compute op before
//               (Event::wake_late_ns): the emulation's own lag;
//   link_gate   a message waited longer than planned before its first byte
//               (temporal sharing's gate, KV pieces holding the link);
//   transfers   a message or an all-reduce took longer than planned on the wire;
//   other       the rest of a gap between two ops (dispatch), and the
//               difference between the planned length of this path and the
//               plan's iteration (the real run took another path).
// The causes add up to iteration_s - planned_s, so the headline is the
// measured slowdown, with nothing left out.
#pragma once

#include <cstddef>
#include <string>

namespace wanlab::harness {

struct RunRecord;

struct SlowdownCauses {
  double gpu_held_s = 0;
  double wake_ups_s = 0;
  double link_gate_s = 0;
  double transfers_s = 0;
  double other_s = 0;
  double total_s() const { return gpu_held_s + wake_ups_s + link_gate_s + transfers_s + other_s; }
  bool operator==(const SlowdownCauses&) const = default;
};

// Every op of those iterations: how much later than planned it started,
// each measured from its own iteration's start (negative: earlier). Not a
// cause of its own: where ops drift, and how far.
struct OpStartLateness {
  std::size_t ops = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  bool operator==(const OpStartLateness&) const = default;
};

// Means per iteration over the iterations summarize_run uses.
struct TrainingSlowdown {
  int iterations = 0;
  double iteration_s = 0;  // measured
  double planned_s = 0;    // simulated, same plan
  SlowdownCauses causes;   // add up to iteration_s - planned_s
  OpStartLateness op_start_late;
  double ratio() const { return planned_s > 0 ? iteration_s / planned_s : 0; }
  bool operator==(const TrainingSlowdown&) const = default;
};

// `real`'s iterations against `planned` (the simulator's record of the same
// plan, at least as many iterations). Throws std::invalid_argument if the
// two records are not of one plan.
TrainingSlowdown attribute_slowdown(const RunRecord& real, const RunRecord& planned);

// "iteration 2.68 s against 2.40 s planned (+11.7%): transfers +0.20 s, ...;
// ops started p50 +1.2 ms, p99 +180.0 ms late" (causes of at least 0.5 ms,
// largest first).
std::string describe(const TrainingSlowdown& slowdown);

}  // namespace wanlab::harness
