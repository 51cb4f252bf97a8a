// Bubble prediction: a worker's idle windows in one iteration, placed at the
// next iteration's start, and how far a prediction was from what happened.
#include <algorithm>

#include "bubbletea/prefill_internal.hpp"
#include "record/record_internal.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"

namespace wanlab::harness {
namespace detail {

std::vector<std::vector<std::size_t>> events_by_iteration(const RunRecord& record, int iterations) {
  std::vector<std::vector<std::size_t>> indices(static_cast<std::size_t>(std::max(iterations, 0)));
  for (std::size_t index = 0; index < record.events.size(); ++index) {
    int iteration = record.events[index].iteration;
    if (iteration >= 0 && iteration < iterations) indices[static_cast<std::size_t>(iteration)].push_back(index);
  }
  return indices;
}

std::vector<std::vector<Window>> idle_offsets_of(const RunRecord& record, int iteration,
                                                 const std::vector<std::size_t>& events) {
  std::size_t workers = record.plan.workers.size();
  std::vector<std::vector<const Event*>> compute(workers);
  for (std::size_t index : events) {
    const Event& event = record.events[index];
    if (!detail::is_compute(event.kind) || event.worker < 0 || static_cast<std::size_t>(event.worker) >= workers)
      continue;
    compute[static_cast<std::size_t>(event.worker)].push_back(&event);
  }
  IterationSpan span = iteration_span(record, iteration);
  std::vector<std::vector<Window>> offsets(workers);
  for (std::size_t worker = 0; worker < workers; ++worker) {
    std::vector<const Event*>& busy = compute[worker];
    std::sort(busy.begin(), busy.end(), [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
    // Compute of a real run may overlap the iteration's bounds by a little
    // (clock reads): the cursor clamps everything into [start, end).
    std::int64_t cursor = span.start_ns;
    auto add = [&](std::int64_t until, int before_op) {
      until = std::min(until, span.end_ns);
      if (until > cursor) {
        offsets[worker].push_back({static_cast<int>(worker), cursor - span.start_ns, until - span.start_ns, before_op});
      }
    };
    for (const Event* event : busy) {
      add(event->start_ns, event->op_index);
      cursor = std::max(cursor, event->end_ns);
    }
    add(span.end_ns, -1);
  }
  return offsets;
}

}  // namespace detail

std::vector<std::vector<Window>> idle_offsets(const RunRecord& record, int iteration) {
  std::vector<std::size_t> events;
  for (std::size_t index = 0; index < record.events.size(); ++index) {
    if (record.events[index].iteration == iteration) events.push_back(index);
  }
  return detail::idle_offsets_of(record, iteration, events);
}

std::vector<std::vector<Window>> idle_in_both(const std::vector<std::vector<Window>>& a,
                                              const std::vector<std::vector<Window>>& b) {
  std::vector<std::vector<Window>> both(std::min(a.size(), b.size()));
  for (std::size_t w = 0; w < both.size(); ++w) {
    for (const Window& x : a[w]) {
      const auto twin =
          std::find_if(b[w].begin(), b[w].end(), [&](const Window& y) { return y.before_op == x.before_op; });
      if (twin == b[w].end()) continue;
      const Window shared{x.worker, std::max(x.start_ns, twin->start_ns), std::min(x.end_ns, twin->end_ns),
                          x.before_op};
      if (shared.end_ns > shared.start_ns) both[w].push_back(shared);
    }
  }
  return both;
}

std::vector<Window> predict_windows(const std::vector<std::vector<Window>>& offsets, std::int64_t iteration_start_ns,
                                    std::int64_t min_ns) {
  std::vector<Window> windows;
  for (const std::vector<Window>& worker : offsets) {
    for (const Window& offset : worker) {
      if (offset.end_ns - offset.start_ns < min_ns) continue;
      windows.push_back(
          {offset.worker, iteration_start_ns + offset.start_ns, iteration_start_ns + offset.end_ns, offset.before_op});
    }
  }
  return windows;
}

std::vector<std::map<int, std::int64_t>> compute_end_offsets(const RunRecord& record, int iteration) {
  std::vector<std::map<int, std::int64_t>> ends(record.plan.workers.size());
  const detail::IterationSpan span = detail::iteration_span(record, iteration);
  for (const Event& event : record.events) {
    if (event.iteration != iteration || !detail::is_compute(event.kind) || event.worker < 0 ||
        static_cast<std::size_t>(event.worker) >= ends.size())
      continue;
    ends[static_cast<std::size_t>(event.worker)][event.op_index] = event.end_ns - span.start_ns;
  }
  return ends;
}

void DriftFollower::reset(std::size_t workers) { applied_ns_.assign(workers, 0); }

std::int64_t DriftFollower::applied_ns(int worker) const {
  return worker >= 0 && static_cast<std::size_t>(worker) < applied_ns_.size()
             ? applied_ns_[static_cast<std::size_t>(worker)]
             : 0;
}

DriftFollower::Shift DriftFollower::compute_ended(int worker, std::int64_t predicted_end_ns,
                                                  std::int64_t actual_end_ns) {
  if (worker < 0 || static_cast<std::size_t>(worker) >= applied_ns_.size()) return {};
  std::int64_t& applied = applied_ns_[static_cast<std::size_t>(worker)];
  const Shift shift{predicted_end_ns + applied, (actual_end_ns - predicted_end_ns) - applied};
  applied += shift.by_ns;
  return shift;
}

namespace {

std::int64_t overlap(const Window& a, const Window& b) {
  return std::max<std::int64_t>(0, std::min(a.end_ns, b.end_ns) - std::max(a.start_ns, b.start_ns));
}

// The actual window (sorted, disjoint) that overlaps `predicted` most; with no
// overlap, the one whose start is nearest. nullptr when there is none.
const Window* match(const Window& predicted, const std::vector<Window>& actual) {
  if (actual.empty()) return nullptr;
  auto first = std::partition_point(actual.begin(), actual.end(),
                                    [&](const Window& window) { return window.end_ns <= predicted.start_ns; });
  const Window* best = nullptr;
  std::int64_t best_overlap = 0;
  for (auto window = first; window != actual.end() && window->start_ns < predicted.end_ns; ++window) {
    if (overlap(*window, predicted) > best_overlap) {
      best_overlap = overlap(*window, predicted);
      best = &*window;
    }
  }
  if (best != nullptr) return best;
  // No overlap: the neighbours on either side of where it would be.
  auto distance = [&](const Window& window) {
    std::int64_t gap = window.start_ns - predicted.start_ns;
    return gap < 0 ? -gap : gap;
  };
  const Window* after = first != actual.end() ? &*first : nullptr;
  const Window* before = first != actual.begin() ? &*(first - 1) : nullptr;
  if (after == nullptr) return before;
  if (before == nullptr) return after;
  return distance(*before) <= distance(*after) ? before : after;
}

}  // namespace

std::vector<PredictionError> prediction_errors(const std::vector<Window>& predicted,
                                               const std::vector<std::vector<Window>>& actual_offsets,
                                               std::int64_t iteration_start_ns, int iteration) {
  std::vector<std::vector<Window>> actual;
  for (const std::vector<Window>& worker : actual_offsets) {
    actual.push_back(predict_windows({worker}, iteration_start_ns));
  }
  std::vector<PredictionError> errors;
  for (const Window& window : predicted) {
    const std::int64_t length = window.end_ns - window.start_ns;
    PredictionError error{window.worker, iteration, 0, -length, length};
    if (window.worker >= 0 && static_cast<std::size_t>(window.worker) < actual.size()) {
      if (const Window* found = match(window, actual[static_cast<std::size_t>(window.worker)])) {
        error.start_error_ns = found->start_ns - window.start_ns;
        error.length_error_ns = (found->end_ns - found->start_ns) - (window.end_ns - window.start_ns);
      }
    }
    errors.push_back(error);
  }
  return errors;
}

}  // namespace wanlab::harness
