// A real run's slowdown against its plan, attributed along each iteration's
// critical path (slowdown.hpp says how).
#include "wanlab/harness/record/slowdown.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "record/record_internal.hpp"
#include "wanlab/base/stats.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {
namespace {

bool is_compute(const Event& e) { return e.kind == OpKind::forward || e.kind == OpKind::backward; }

// A record's events and transfers per iteration, sorted out once: a long run
// has millions of events, and each iteration's view needs only its own.
struct ByIteration {
  std::vector<std::vector<const Event*>> events;
  std::vector<std::vector<const TransferRecord*>> transfers;

  explicit ByIteration(const RunRecord& record)
      : events(record.iteration_start_ns.size()), transfers(record.iteration_start_ns.size()) {
    for (const Event& e : record.events)
      if (e.iteration >= 0 && static_cast<std::size_t>(e.iteration) < events.size()) events[e.iteration].push_back(&e);
    for (const TransferRecord& t : record.transfers)
      if (t.iteration >= 0 && static_cast<std::size_t>(t.iteration) < transfers.size())
        transfers[t.iteration].push_back(&t);
  }
};

// One iteration of one record: its events by worker and op, its cross-DC
// transfers by sender and op, and where each worker moved on from each op.
class IterationView {
 public:
  IterationView(const RunRecord& record, const ByIteration& by_iteration, int iteration)
      : start_ns_(record.iteration_start_ns.at(static_cast<std::size_t>(iteration))),
        end_ns_(record.iteration_end_ns.at(static_cast<std::size_t>(iteration))) {
    ops_.resize(record.plan.workers.size());
    overlapped_.resize(record.plan.workers.size());
    for (std::size_t w = 0; w < ops_.size(); ++w) {
      ops_[w].assign(record.plan.workers[w].ops.size(), nullptr);
      for (const Op& op : record.plan.workers[w].ops) overlapped_[w].push_back(op.overlapped);
    }
    for (const Event* event : by_iteration.events.at(static_cast<std::size_t>(iteration))) {
      const Event& e = *event;
      if (e.worker < 0 || static_cast<std::size_t>(e.worker) >= ops_.size() || e.op_index < 0 ||
          static_cast<std::size_t>(e.op_index) >= ops_[static_cast<std::size_t>(e.worker)].size())
        throw std::invalid_argument(fmt::format("event of worker {} op {} is not in the plan", e.worker, e.op_index));
      ops_[static_cast<std::size_t>(e.worker)][static_cast<std::size_t>(e.op_index)] = &e;
      ++events_;
      if (e.kind == OpKind::send) sends_[{e.worker, e.peer, e.microbatch}] = &e;
    }
    for (const TransferRecord* t : by_iteration.transfers.at(static_cast<std::size_t>(iteration)))
      transfers_[{t->worker, t->op_index}] = t;
  }

  std::int64_t start_ns() const { return start_ns_; }
  std::size_t events() const { return events_; }
  std::int64_t end_ns() const { return end_ns_; }

  const Event& event(int worker, int op) const {
    const Event* e = ops_.at(static_cast<std::size_t>(worker)).at(static_cast<std::size_t>(op));
    if (e == nullptr) throw std::invalid_argument(fmt::format("worker {} has no event for op {}", worker, op));
    return *e;
  }
  const Event& send_to(int sender, int receiver, int microbatch) const {
    const auto it = sends_.find({sender, receiver, microbatch});
    if (it == sends_.end())
      throw std::invalid_argument(
          fmt::format("no send from worker {} to {} of microbatch {}", sender, receiver, microbatch));
    return *it->second;
  }
  const TransferRecord* transfer(int worker, int op) const {
    const auto it = transfers_.find({worker, op});
    return it == transfers_.end() ? nullptr : it->second;
  }

  // The op before `op` that the worker waited for (sends and overlapped
  // all-reduces run beside it), or -1.
  int previous(int worker, int op) const {
    for (int p = op - 1; p >= 0; --p) {
      const Event& e = event(worker, p);
      if (e.kind != OpKind::send && !(e.kind == OpKind::allreduce &&
                                      overlapped_.at(static_cast<std::size_t>(worker)).at(static_cast<std::size_t>(p))))
        return p;
    }
    return -1;
  }
  // When the worker reached `op`: when the op before it ended, or the iteration's start.
  std::int64_t reached(int worker, int op) const {
    const int p = previous(worker, op);
    return p < 0 ? start_ns_ : event(worker, p).end_ns;
  }

  // Of a send, the time before its first byte went (its gate, its channel's
  // queue) and the time on the wire until it arrived.
  std::pair<std::int64_t, std::int64_t> send_times(const Event& send) const {
    const std::int64_t from = reached(send.worker, send.op_index);
    const TransferRecord* t = transfer(send.worker, send.op_index);
    const std::int64_t first_byte = t != nullptr ? std::clamp(t->first_sent_ns, from, send.end_ns) : send.start_ns;
    return {first_byte - from, send.end_ns - first_byte};
  }

  // The event that ended last: where the critical path starts.
  const Event& last() const {
    const Event* latest = nullptr;
    for (const auto& worker : ops_)
      for (const Event* e : worker)
        if (e != nullptr && (latest == nullptr || e->end_ns > latest->end_ns)) latest = e;
    if (latest == nullptr) throw std::invalid_argument("an iteration without events");
    return *latest;
  }

 private:
  std::int64_t start_ns_ = 0;
  std::int64_t end_ns_ = 0;
  std::size_t events_ = 0;
  std::vector<std::vector<const Event*>> ops_;
  std::vector<std::vector<bool>> overlapped_;                // by worker and op: Op::overlapped
  std::map<std::tuple<int, int, int>, const Event*> sends_;  // (sender, receiver, microbatch)
  std::map<std::pair<int, int>, const TransferRecord*> transfers_;
};

struct CausesNs {
  std::int64_t gpu_held = 0, wake_ups = 0, link_gate = 0, transfers = 0, other = 0;
  std::int64_t total() const { return gpu_held + wake_ups + link_gate + transfers + other; }
};

// The gap between when `e`'s worker reached it and its start: prefill's hold
// of the GPU (its recorded wait), then the timer's late wake-up after the
// compute op before, then dispatch.
void attribute_gap(const IterationView& real, const Event& e, CausesNs& causes) {
  std::int64_t gap = e.start_ns - real.reached(e.worker, e.op_index);
  if (is_compute(e)) {
    const std::int64_t held = std::clamp<std::int64_t>(e.gpu_wait_ns, 0, std::max<std::int64_t>(0, gap));
    causes.gpu_held += held;
    gap -= held;
  }
  if (const int p = real.previous(e.worker, e.op_index); p >= 0 && is_compute(real.event(e.worker, p))) {
    const std::int64_t late =
        std::clamp<std::int64_t>(real.event(e.worker, p).wake_late_ns, 0, std::max<std::int64_t>(0, gap));
    causes.wake_ups += late;
    gap -= late;
  }
  causes.other += gap;
}

// Walks iteration `i`'s critical path back from its last event; returns the
// path's excess over the planned length of its pieces, by cause.
CausesNs walk_critical_path(const IterationView& real, const IterationView& planned) {
  CausesNs causes;
  const Event* cur = &real.last();
  causes.other += real.end_ns() - cur->end_ns;
  // Each step goes back in time; a timeline where it would not is refused, not walked forever.
  std::size_t steps_left = real.events();
  for (;; --steps_left) {
    if (steps_left == 0) throw std::invalid_argument("the critical path runs in a circle: times out of order");
    const Event& e = *cur;
    if (e.kind == OpKind::recv && e.end_ns > e.start_ns) {
      // It waited for the message: the path goes through the send.
      const Event& send = real.send_to(e.peer, e.worker, e.microbatch);
      causes.other += e.end_ns - send.end_ns;
      cur = &send;
      continue;
    }
    if (e.kind == OpKind::send) {
      const auto [gate, wire] = real.send_times(e);
      const auto [planned_gate, planned_wire] = planned.send_times(planned.event(e.worker, e.op_index));
      causes.link_gate += gate - planned_gate;
      causes.transfers += wire - planned_wire;
    } else {
      // Against the same op planned: an all-reduce's excess (or a wait for
      // one) is its ring's transfers; a compute op's (its planned length) or a
      // receive's whose message was there (~0) is other.
      const Event& p = planned.event(e.worker, e.op_index);
      const std::int64_t excess = (e.end_ns - e.start_ns) - (p.end_ns - p.start_ns);
      const bool ring = e.kind == OpKind::allreduce || e.kind == OpKind::allreduce_wait;
      (ring ? causes.transfers : causes.other) += excess;
      attribute_gap(real, e, causes);
    }
    const int p = real.previous(e.worker, e.op_index);
    if (p < 0) break;
    cur = &real.event(e.worker, p);
  }
  return causes;
}

// Each event's start from its iteration's start, against the same op planned.
void collect_start_lateness(const IterationView& real, const IterationView& planned,
                            const std::vector<const Event*>& events, std::vector<std::int64_t>& late) {
  for (const Event* e : events) {
    const Event& p = planned.event(e->worker, e->op_index);
    late.push_back((e->start_ns - real.start_ns()) - (p.start_ns - planned.start_ns()));
  }
}

OpStartLateness start_lateness(const std::vector<std::int64_t>& late_ns) {
  OpStartLateness o;
  o.ops = late_ns.size();
  if (late_ns.empty()) return o;
  std::vector<double> late_ms;
  late_ms.reserve(late_ns.size());
  for (const std::int64_t ns : late_ns) late_ms.push_back(static_cast<double>(ns) / 1e6);
  o.p50_ms = base::percentile(late_ms, 50);
  o.p99_ms = base::percentile(late_ms, 99);
  o.max_ms = *std::max_element(late_ms.begin(), late_ms.end());
  return o;
}

void check_same_plan(const RunRecord& real, const RunRecord& planned) {
  if (real.plan.workers.size() != planned.plan.workers.size())
    throw std::invalid_argument(
        fmt::format("a plan of {} workers against one of {}", real.plan.workers.size(), planned.plan.workers.size()));
  for (std::size_t w = 0; w < real.plan.workers.size(); ++w)
    if (real.plan.workers[w].ops.size() != planned.plan.workers[w].ops.size())
      throw std::invalid_argument(fmt::format("worker {} has {} ops against {} planned", w,
                                              real.plan.workers[w].ops.size(), planned.plan.workers[w].ops.size()));
  if (planned.iteration_start_ns.size() < real.iteration_start_ns.size())
    throw std::invalid_argument(fmt::format("{} iterations against {} planned", real.iteration_start_ns.size(),
                                            planned.iteration_start_ns.size()));
}

}  // namespace

TrainingSlowdown attribute_slowdown(const RunRecord& real, const RunRecord& planned) {
  check_same_plan(real, planned);
  TrainingSlowdown slowdown;
  const int iterations = static_cast<int>(real.iteration_start_ns.size());
  if (iterations == 0) return slowdown;
  const int first = detail::skipped_iterations(iterations);
  CausesNs sum;
  std::int64_t real_ns = 0, planned_ns = 0;
  const ByIteration real_events(real), planned_events(planned);
  std::vector<std::int64_t> start_late;
  for (int i = first; i < iterations; ++i) {
    const IterationView real_view(real, real_events, i);
    const IterationView planned_view(planned, planned_events, i);
    collect_start_lateness(real_view, planned_view, real_events.events.at(static_cast<std::size_t>(i)), start_late);
    const std::int64_t took = real_view.end_ns() - real_view.start_ns();
    const std::int64_t plan_took = planned_view.end_ns() - planned_view.start_ns();
    CausesNs causes = walk_critical_path(real_view, planned_view);
    // This path's planned length against the plan's iteration: the rest.
    causes.other += (took - plan_took) - causes.total();
    sum.gpu_held += causes.gpu_held;
    sum.wake_ups += causes.wake_ups;
    sum.link_gate += causes.link_gate;
    sum.transfers += causes.transfers;
    sum.other += causes.other;
    real_ns += took;
    planned_ns += plan_took;
  }
  slowdown.iterations = iterations - first;
  const double per_iteration = 1e9 * slowdown.iterations;
  slowdown.iteration_s = static_cast<double>(real_ns) / per_iteration;
  slowdown.planned_s = static_cast<double>(planned_ns) / per_iteration;
  slowdown.causes = {
      static_cast<double>(sum.gpu_held) / per_iteration, static_cast<double>(sum.wake_ups) / per_iteration,
      static_cast<double>(sum.link_gate) / per_iteration, static_cast<double>(sum.transfers) / per_iteration,
      static_cast<double>(sum.other) / per_iteration};
  slowdown.op_start_late = start_lateness(start_late);
  return slowdown;
}

std::string describe(const TrainingSlowdown& slowdown) {
  std::string text = fmt::format("iteration {:.3f} s against {:.3f} s planned ({:+.1f}%)", slowdown.iteration_s,
                                 slowdown.planned_s, (slowdown.ratio() - 1) * 100);
  const SlowdownCauses& c = slowdown.causes;
  std::vector<std::pair<double, const char*>> causes{{c.transfers_s, "transfers"},
                                                     {c.link_gate_s, "link gate"},
                                                     {c.gpu_held_s, "prefill held the GPU"},
                                                     {c.wake_ups_s, "late wake-ups"},
                                                     {c.other_s, "other"}};
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
  std::string parts;
  for (const auto& [seconds, name] : causes)
    if (std::abs(seconds) >= 0.0005) parts += fmt::format("{}{} {:+.3f} s", parts.empty() ? "" : ", ", name, seconds);
  if (!parts.empty()) text += ": " + parts;
  const OpStartLateness& o = slowdown.op_start_late;
  if (o.ops > 0 && (o.p99_ms >= 0.5 || o.p99_ms <= -0.5))
    text += fmt::format("; ops started p50 {:+.1f} ms, p99 {:+.1f} ms late", o.p50_ms, o.p99_ms);
  return text;
}

}  // namespace wanlab::harness
