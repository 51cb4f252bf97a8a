// Bubble prediction: a worker's idle windows in one iteration, placed at the
// next iteration's start, and how far a prediction was from what happened.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace wanlab::harness {

struct RunRecord;

// A span of one worker's GPU time, in ns since the run's origin.
struct Window {
  int worker = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  // Its place in the schedule: the index of the worker's op whose compute
  // ends it; -1 for the idle time from its last compute to the iteration's
  // end (or where it is not known).
  int before_op = -1;
};

// The training schedule repeats every iteration: the idle windows of every
// worker's GPU in iteration `iteration` of `record` (gaps between its forward
// and backward events, and from its last compute to the iteration's end),
// as offsets from that iteration's start. Per worker, in time order.
std::vector<std::vector<Window>> idle_offsets(const RunRecord& record, int iteration);
// Per worker, the idle time two iterations' offsets share place by place:
// each window of `a` against the window of `b` that the same op ends, the
// time in both (the schedule repeats, so a bubble is the same bubble when the
// same op ends it). A window without its twin is left out. Intersecting every
// window with every other instead cut slivers out of neighbouring bubbles
// wherever one iteration ran a little ahead of the other.
std::vector<std::vector<Window>> idle_in_both(const std::vector<std::vector<Window>>& a,
                                              const std::vector<std::vector<Window>>& b);
// Those offsets placed at `iteration_start_ns`: the prediction of the next
// iteration's windows. Windows shorter than `min_ns` are dropped.
std::vector<Window> predict_windows(const std::vector<std::vector<Window>>& offsets, std::int64_t iteration_start_ns,
                                    std::int64_t min_ns = 0);

// Where each worker's computes end in iteration `iteration` of `record`, as
// offsets from its start: per worker, op index -> end offset.
std::vector<std::map<int, std::int64_t>> compute_end_offsets(const RunRecord& record, int iteration);

// A prediction that follows the schedule as it runs. A compute of `worker`
// that the prediction put at `predicted_end_ns` ended at `actual_end_ns`:
// the worker's windows from that compute on (those starting at or after its
// predicted end, moved by what earlier computes moved them) now move by the
// whole drift. On a run slower or faster than its prediction (the first
// iterations come from the simulation: bubbletea-general seed 12's real
// iterations were 6.7% shorter, its bubbles up to 2.4 s early by an
// iteration's end), each bubble is then off by what the schedule drifts
// between one compute and the next, not by all it drifted since the start.
class DriftFollower {
 public:
  void reset(std::size_t workers);
  // The shift (ns) to apply to the worker's windows from `from_ns` on; zero
  // when the drift has not changed.
  struct Shift {
    std::int64_t from_ns = 0;
    std::int64_t by_ns = 0;
  };
  Shift compute_ended(int worker, std::int64_t predicted_end_ns, std::int64_t actual_end_ns);
  std::int64_t applied_ns(int worker) const;

 private:
  std::vector<std::int64_t> applied_ns_;  // per worker: how far its windows have moved
};
// Moves the windows of `worker` that start at or after shift.from_ns by
// shift.by_ns. A window moved earlier starts no earlier than
// `not_before_ns(worker, its start)` (prefill already placed before it).
template <typename NotBefore>
void shift_windows(std::vector<Window>& windows, int worker, DriftFollower::Shift shift, NotBefore not_before_ns) {
  if (shift.by_ns == 0) return;
  for (Window& window : windows) {
    if (window.worker != worker || window.start_ns < shift.from_ns) continue;
    const std::int64_t start = window.start_ns;
    window.start_ns += shift.by_ns;
    window.end_ns += shift.by_ns;
    if (shift.by_ns < 0)
      window.start_ns = std::min(window.end_ns, std::max(window.start_ns, not_before_ns(worker, start)));
  }
}

// Predicted against actual, one error per predicted window: matched with the
// actual window of its worker that overlaps it most, or with none overlapping,
// the one starting nearest; errors in ns. A worker without any actual window
// gives start error 0 and length error -(predicted length).
struct PredictionError {
  int worker = 0;
  int iteration = 0;
  std::int64_t start_error_ns = 0;   // actual start - predicted start
  std::int64_t length_error_ns = 0;  // actual length - predicted length
  std::int64_t predicted_ns = 0;     // the predicted window's length: what the errors are relative to
};
std::vector<PredictionError> prediction_errors(const std::vector<Window>& predicted,
                                               const std::vector<std::vector<Window>>& actual_offsets,
                                               std::int64_t iteration_start_ns, int iteration);

}  // namespace wanlab::harness
