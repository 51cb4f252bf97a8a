// BubbleTea in the simulator: admission over predicted windows, the chunks
// run against the simulated training compute, and the KV caches sent to the
// decode DC. The training timeline is simulated first and does not change.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "bubbletea/prefill_internal.hpp"
#include "record/record_internal.hpp"
#include "sim/simulate_internal.hpp"

namespace wanlab::harness::detail {
namespace {

constexpr std::int64_t kPast = std::numeric_limits<std::int64_t>::min();

using Interval = KvRoutes::Span;

// Sorted, disjoint intervals (ends increase with starts).
std::vector<Interval> merged(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::vector<Interval> out;
  for (const Interval& interval : intervals) {
    if (!out.empty() && interval.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, interval.end_ns);
    } else {
      out.push_back(interval);
    }
  }
  return out;
}

// The first interval of `busy` (sorted, disjoint) that ends after `at`.
std::vector<Interval>::const_iterator first_ending_after(const std::vector<Interval>& busy, std::int64_t at) {
  return std::partition_point(busy.begin(), busy.end(),
                              [&](const Interval& interval) { return interval.end_ns <= at; });
}

// A transfer of `length` ns that may go only while a link is free of
// `busy` (sorted, disjoint), from `at` on, pausing while it is busy (as KV
// pieces leave a link to training): its first and last instant on the link.
Interval in_free_time(const std::vector<Interval>& busy, std::int64_t at, std::int64_t length) {
  auto interval = first_ending_after(busy, at);
  if (interval != busy.end() && interval->start_ns <= at) at = interval++->end_ns;
  const std::int64_t start = at;
  for (; interval != busy.end() && interval->start_ns < at + length; ++interval) {
    length -= interval->start_ns - at;
    at = interval->end_ns;
  }
  return {start, at + length};
}

struct ChunkRef {
  int worker = 0;
  std::int64_t start_ns = 0;
  std::size_t batch = 0;  // index into batches_
  std::size_t chunk = 0;
};

class PrefillSimulation {
 public:
  PrefillSimulation(RunRecord& record, const emulator::Scenario& scenario, const LinkModel& model)
      : record_(record),
        experiment_(record.plan.experiment),
        dcs_(static_cast<int>(scenario.dcs.size())),
        routes_(record.plan, scenario, model) {
    routes_.leave_to_training(record);  // training's events only, so far
  }

  void run() {
    PrefillRecord& prefill = record_.prefill.emplace();
    int iterations = static_cast<int>(std::min(record_.iteration_start_ns.size(), record_.iteration_end_ns.size()));
    prefill.training_delay_ns.assign(record_.plan.workers.size(), 0);
    if (iterations == 0) return;
    run_end_ns_ = record_.iteration_end_ns[static_cast<std::size_t>(iterations - 1)];
    requests_ = load_requests(experiment_, run_end_ns_);
    outcomes_.resize(requests_.size());
    for (const Request& request : requests_) {
      outcomes_[static_cast<std::size_t>(request.id)] = {request.id,
                                                         request.arrival_ns,
                                                         request.prompt_tokens,
                                                         RequestState::unfinished,
                                                         -1,
                                                         -1,
                                                         "waiting for a window when training ended"};
    }
    admit(iterations, prefill.prediction);
    run_chunks(prefill.spans);
    send_kv(prefill.kv);
    prefill.requests = std::move(outcomes_);
    if (failed_batches_ > 0) {
      prefill.notes.push_back(
          fmt::format("{} batches failed: a GPU's idle window was shorter than predicted", failed_batches_));
    }
  }

 private:
  // Iteration i's windows are predicted from iteration i - 1's idle offsets
  // (iteration 0's from its own, as the real run takes its first prediction
  // from a simulation); admission runs at the iteration's start and at every
  // arrival within it.
  void admit(int iterations, std::vector<PredictionError>& errors) {
    std::vector<std::vector<std::size_t>> events = events_by_iteration(record_, iterations);
    // Admission's clock: the time of the schedule() call it estimates for.
    std::int64_t now = 0;
    Admission admission(
        experiment_, [this, &now](int worker, std::uint64_t bytes) { return routes_.estimate_ns(worker, bytes, now); });
    std::vector<std::vector<Window>> previous = idle_offsets_of(record_, 0, events[0]);
    std::size_t next = 0;
    for (int iteration = 0; iteration < iterations; ++iteration) {
      std::int64_t start = record_.iteration_start_ns[static_cast<std::size_t>(iteration)];
      std::int64_t end = record_.iteration_end_ns[static_cast<std::size_t>(iteration)];
      std::vector<std::vector<Window>> actual =
          idle_offsets_of(record_, iteration, events[static_cast<std::size_t>(iteration)]);
      std::vector<Window> windows =
          predict_windows(previous, start, static_cast<std::int64_t>(experiment_.prefill.guard_ns));
      if (iteration > 0) {
        std::vector<PredictionError> more = prediction_errors(windows, actual, start, iteration);
        errors.insert(errors.end(), more.begin(), more.end());
      }
      now = start;
      take(admission.schedule(now, windows));
      while (next < requests_.size() && requests_[next].arrival_ns < end) {
        std::int64_t at = requests_[next].arrival_ns;
        while (next < requests_.size() && requests_[next].arrival_ns == at) admission.arrive(requests_[next++]);
        now = std::max(at, start);
        take(admission.schedule(now, windows));
      }
      previous = std::move(actual);
    }
  }

  void take(Admission::Decisions decisions) {
    for (const Rejection& rejection : decisions.rejections) {
      RequestOutcome& outcome = outcomes_[static_cast<std::size_t>(rejection.request)];
      outcome.state = RequestState::rejected;
      outcome.reason = rejection.reason;
    }
    for (Batch& batch : decisions.batches) {
      for (int id : batch.requests) {
        outcomes_[static_cast<std::size_t>(id)].batch = batch.id;
        outcomes_[static_cast<std::size_t>(id)].reason = "admitted; not done when training ended";
      }
      const Chunk& last = batch.chunks.back();
      routes_.queue(last.worker, last.start_ns + static_cast<std::int64_t>(last.duration_ns), batch.kv_bytes);
      batches_.push_back(std::move(batch));
    }
    prefill_end_ns_.resize(batches_.size(), kPast);
  }

  // Per worker, its training compute, sorted (one GPU computes one op at a time).
  std::vector<std::vector<Interval>> training_compute() const {
    std::vector<std::vector<Interval>> compute(record_.plan.workers.size());
    for (const Event& event : record_.events) {
      if (!is_compute(event.kind) || event.worker < 0 || static_cast<std::size_t>(event.worker) >= compute.size())
        continue;
      compute[static_cast<std::size_t>(event.worker)].push_back({event.start_ns, event.end_ns});
    }
    for (std::vector<Interval>& intervals : compute) intervals = merged(std::move(intervals));
    return compute;
  }

  // Runs the chunks, per GPU in time order, as the real run's lease would: a
  // chunk starts when the GPU is free of training and of earlier prefill, and
  // must end before the GPU's next training compute. One that cannot (its
  // window was shorter than predicted) is dropped, with the rest of its batch,
  // and the batch's requests fail: the simulated training never waits.
  void run_chunks(std::vector<PrefillSpan>& spans) {
    std::vector<ChunkRef> chunks;
    for (std::size_t batch = 0; batch < batches_.size(); ++batch) {
      for (std::size_t chunk = 0; chunk < batches_[batch].chunks.size(); ++chunk) {
        const Chunk& placed = batches_[batch].chunks[chunk];
        chunks.push_back({placed.worker, placed.start_ns, batch, chunk});
      }
    }
    std::sort(chunks.begin(), chunks.end(), [](const ChunkRef& a, const ChunkRef& b) {
      return std::tie(a.worker, a.start_ns, a.batch) < std::tie(b.worker, b.start_ns, b.batch);
    });
    std::vector<std::vector<Interval>> compute = training_compute();
    failed_.assign(batches_.size(), false);
    std::vector<std::int64_t> gpu_free(compute.size(), kPast);
    for (const ChunkRef& ref : chunks) {
      if (failed_[ref.batch]) continue;
      const Batch& batch = batches_[ref.batch];
      const Chunk& chunk = batch.chunks[ref.chunk];
      auto worker = static_cast<std::size_t>(chunk.worker);
      std::int64_t start = std::max(chunk.start_ns, gpu_free[worker]);
      auto next = first_ending_after(compute[worker], start);
      if (next != compute[worker].end() && next->start_ns <= start) start = (next++)->end_ns;
      std::int64_t end = start + static_cast<std::int64_t>(chunk.duration_ns);
      if (next != compute[worker].end() && next->start_ns < end) {
        fail(ref.batch);
        continue;
      }
      spans.push_back({chunk.worker, batch.id, static_cast<int>(ref.chunk), batch.tokens, chunk.first_layer,
                       chunk.end_layer, start, end});
      gpu_free[worker] = end;
      prefill_end_ns_[ref.batch] = end;
    }
  }

  void fail(std::size_t index) {
    const Batch& batch = batches_[index];
    failed_[index] = true;
    ++failed_batches_;
    for (int id : batch.requests) {
      RequestOutcome& outcome = outcomes_[static_cast<std::size_t>(id)];
      outcome.state = RequestState::failed;
      outcome.reason = fmt::format("prediction wrong: worker {}'s idle window was shorter than predicted",
                                   batch.chunks.front().worker);
    }
  }

  // Each finished batch's KV cache, in placement order (batch ids), as the
  // real run sends them (KvSendOrder, PrefillService::kv_turn): admission's
  // estimate counts the caches placed before a cache on its route, never a
  // later one. A cache leaves once its prefill has ended and the caches
  // placed before it on its queue have left: a WAN link under temporal
  // sharing or a DC's own link, where caches take turns, else its worker's
  // channel. On such a link it goes only while training's sends leave it
  // free, pausing while they hold it (in_free_time).
  void send_kv(std::vector<KvTransfer>& kv) {
    std::map<int, std::vector<Interval>> busy = routes_.training_busy(record_);
    std::map<int, std::int64_t> queue_free;  // per link taken in turns (its index), else per worker (-1 - worker)
    for (std::size_t index = 0; index < batches_.size(); ++index) {
      if (failed_[index] || prefill_end_ns_[index] == kPast) continue;
      const Batch& batch = batches_[index];
      const int worker = batch.chunks.front().worker;
      const KvRoutes::Route& route = routes_.route(worker);
      std::int64_t wire = route.wire_ns(batch.kv_bytes);
      const bool turns = routes_.takes_turns(worker);
      std::int64_t& free = queue_free.try_emplace(turns ? route.link_index : -1 - worker, kPast).first->second;
      Interval on_link{std::max(prefill_end_ns_[index], free), 0};
      on_link.end_ns = on_link.start_ns + wire;
      if (turns) on_link = in_free_time(busy[route.link_index], on_link.start_ns, wire);
      free = on_link.end_ns;
      KvTransfer transfer{batch.id,       worker,           route.link,
                          batch.kv_bytes, on_link.start_ns, on_link.end_ns + route.delay_ns};
      transfer.predicted_end_ns = batch.predicted_first_token_ns;
      transfer.deadline_ns = deadline(batch);
      kv.push_back(transfer);
      serve(batch, transfer.end_ns);
    }
  }

  // When the batch's first request must have its first token.
  std::int64_t deadline(const Batch& batch) const {
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    for (int id : batch.requests) earliest = std::min(earliest, requests_[static_cast<std::size_t>(id)].arrival_ns);
    return earliest + static_cast<std::int64_t>(experiment_.prefill.ttft_slo_ns);
  }

  void serve(const Batch& batch, std::int64_t first_token_ns) {
    for (int id : batch.requests) {
      RequestOutcome& outcome = outcomes_[static_cast<std::size_t>(id)];
      if (first_token_ns > run_end_ns_) {
        outcome.reason = "KV cache still on its way when training ended";
        continue;
      }
      outcome.state = RequestState::served;
      outcome.first_token_ns = first_token_ns;
      outcome.reason.clear();
    }
  }

  RunRecord& record_;
  const Experiment& experiment_;
  int dcs_;
  KvRoutes routes_;
  std::vector<Request> requests_;
  std::vector<RequestOutcome> outcomes_;      // by request id
  std::vector<Batch> batches_;                // by batch id
  std::vector<std::int64_t> prefill_end_ns_;  // per batch: its last chunk's end, kPast until it ran
  std::vector<bool> failed_;                  // per batch: a chunk could not run
  int failed_batches_ = 0;
  std::int64_t run_end_ns_ = 0;
};

}  // namespace

void simulate_prefill(RunRecord& record, const emulator::Scenario& scenario, const LinkModel& model) {
  PrefillSimulation(record, scenario, model).run();
}

}  // namespace wanlab::harness::detail

namespace wanlab::harness {

std::int64_t KvRoutes::Route::wire_ns(std::uint64_t bytes) const {
  return std::isfinite(rate_bps) ? static_cast<std::int64_t>(std::llround(static_cast<double>(bytes) * 8e9 / rate_bps))
                                 : 0;
}

std::int64_t KvRoutes::Route::expected_ns(std::uint64_t bytes) const {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(wire_ns(bytes)) / share));
}

int decode_dc_of(const Experiment& experiment, const emulator::Scenario& scenario, int worker_dc) {
  return experiment.prefill.decode_local() ? worker_dc : scenario.dc_index(experiment.prefill.decode_dc);
}

std::string decode_host_name(const emulator::Scenario& scenario, int dc) {
  return scenario.dcs.at(static_cast<std::size_t>(dc)).name + "-0";
}

KvRoutes::KvRoutes(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model)
    : plan_(&plan), dcs_(static_cast<int>(scenario.dcs.size())), temporal_sharing_(plan.experiment.temporal_sharing) {
  const Experiment& experiment = plan.experiment;
  const int dcs = dcs_;
  for (const WorkerPlan& worker_plan : plan.workers) {
    const int src = worker_plan.worker.dc;
    const int decode = decode_dc_of(experiment, scenario, src);
    if (decode < 0) {
      throw ExperimentError(fmt::format("{}: [prefill] decode_dc \"{}\" is not a DC of the testbed",
                                        experiment.where("prefill.decode_dc"), experiment.prefill.decode_dc));
    }
    const bool cross = src != decode;
    const detail::LinkRate rate = detail::link_rate(experiment, scenario, model, src, decode);
    Route route;
    route.delay_ns = static_cast<std::int64_t>(rate.delay_ns);
    route.rate_bps = detail::alone_rate_bps(rate, cross ? experiment.streams : 1);
    // On the decode host itself the cache goes over loopback, which the emulator does not shape.
    if (model.free_communication || worker_plan.worker.host == decode_host_name(scenario, decode)) {
      route.rate_bps = std::numeric_limits<double>::infinity();
      route.delay_ns = 0;
    } else if (!cross) {
      route.link_index = src * dcs + src;  // the DC's own link, shared by its workers' caches
    }
    if (cross) {
      route.link = fmt::format("{}->{}", scenario.dcs[static_cast<std::size_t>(src)].name,
                               scenario.dcs[static_cast<std::size_t>(decode)].name);
      route.link_index = src * dcs + decode;
      // Without temporal sharing the KV cache shares the link with training's
      // transfers: as an approximation it gets half the rate, at once.
      if (!experiment.temporal_sharing) route.rate_bps /= 2;
    }
    routes_.push_back(std::move(route));
  }
}

bool KvRoutes::takes_turns(int worker) const {
  const Route& r = route(worker);
  return r.link_index >= 0 && (temporal_sharing_ || r.link.empty());
}

std::map<int, std::vector<KvRoutes::Span>> KvRoutes::training_busy(const RunRecord& training) const {
  std::map<int, std::int64_t> delay_of;  // per link_index on which caches take turns
  for (int worker = 0; worker < static_cast<int>(routes_.size()); ++worker)
    if (takes_turns(worker)) delay_of[route(worker).link_index] = route(worker).delay_ns;
  std::map<int, std::vector<Span>> busy;
  for (const Event& event : training.events) {
    if (event.kind != OpKind::send) continue;
    const Worker& from = plan_->workers[static_cast<std::size_t>(event.worker)].worker;
    const Worker& to = plan_->workers[static_cast<std::size_t>(event.peer)].worker;
    const auto delay = delay_of.find(from.dc * dcs_ + to.dc);
    if (delay == delay_of.end() || (!event.cross_dc && from.host == to.host)) continue;
    const std::int64_t lead = event.cross_dc ? 0 : kAnnounceLeadNs;
    busy[delay->first].push_back({event.start_ns - lead, std::max(event.start_ns, event.end_ns - delay->second)});
  }
  for (auto& [link, spans] : busy) spans = detail::merged(std::move(spans));
  return busy;
}

void KvRoutes::leave_to_training(const RunRecord& training) {
  if (training.events.empty()) return;
  std::int64_t first = training.events.front().start_ns, last = training.events.front().end_ns;
  for (const Event& event : training.events) {
    first = std::min(first, event.start_ns);
    last = std::max(last, event.end_ns);
  }
  if (last <= first) return;
  for (const auto& [link, spans] : training_busy(training)) {
    std::int64_t held = 0;
    for (const Span& span : spans) held += span.end_ns - span.start_ns;
    // Never quite nothing: a link that training holds throughout still ends its caches' estimates.
    const double left = std::max(0.05, 1.0 - static_cast<double>(held) / static_cast<double>(last - first));
    for (Route& r : routes_)
      if (r.link_index == link) r.share = left;
  }
}

namespace {
// Caches on a link queue per link; over loopback (infinite rate) per worker.
int queue_key(const KvRoutes::Route& route, int worker) {
  return route.link_index >= 0 ? route.link_index : -1 - worker;
}
}  // namespace

double KvRoutes::slowdown(int worker) const {
  const auto it = slowdown_.find(queue_key(route(worker), worker));
  return it == slowdown_.end() ? 1.0 : it->second;
}

std::int64_t KvRoutes::wire_ns(int worker, std::uint64_t bytes) const {
  const std::int64_t modelled = route(worker).expected_ns(bytes);
  if (modelled <= 0) {  // unshaped: what the real run measured, if anything
    const auto learned = unshaped_ns_per_byte_.find(queue_key(route(worker), worker));
    return learned == unshaped_ns_per_byte_.end() ? 0 : std::llround(static_cast<double>(bytes) * learned->second);
  }
  return static_cast<std::int64_t>(std::llround(static_cast<double>(modelled) * slowdown(worker)));
}

std::int64_t KvRoutes::estimate_ns(int worker, std::uint64_t bytes, std::int64_t now_ns) const {
  const Route& r = route(worker);
  const auto queued = free_at_.find(queue_key(r, worker));
  const std::int64_t backlog = queued == free_at_.end() ? 0 : std::max<std::int64_t>(0, queued->second - now_ns);
  return r.delay_ns + wire_ns(worker, bytes) + backlog + margin_ns(worker);
}

void KvRoutes::observe_lateness(int worker, std::int64_t late_ns) {
  // Against the estimate without the margin (the prediction had it, about as
  // it is now): measured with it, a margin that worked would learn itself away.
  const std::int64_t without_margin = late_ns + margin_ns(worker);
  std::vector<std::int64_t>& samples = lateness_[queue_key(route(worker), worker)];
  samples.push_back(without_margin);
  if (samples.size() > kLatenessSamples) samples.erase(samples.begin());
}

std::int64_t KvRoutes::margin_ns(int worker) const {
  const auto it = lateness_.find(queue_key(route(worker), worker));
  if (it == lateness_.end() || it->second.empty()) return 0;
  return std::max<std::int64_t>(0, *std::max_element(it->second.begin(), it->second.end()));
}

void KvRoutes::queue(int worker, std::int64_t ready_ns, std::uint64_t bytes) {
  const Route& r = route(worker);
  std::int64_t& free_at = free_at_.try_emplace(queue_key(r, worker), ready_ns).first->second;
  free_at = std::max(free_at, ready_ns) + wire_ns(worker, bytes);
}

// In the order given: placement order, the order caches are sent in
// (KvSendOrder), which admission's estimate assumes.
void KvRoutes::requeue(int worker, std::int64_t now_ns, std::vector<Waiting> waiting) {
  std::int64_t free_at = now_ns;
  for (const Waiting& w : waiting) free_at = std::max(free_at, w.ready_ns) + wire_ns(w.worker, w.bytes);
  free_at_[queue_key(route(worker), worker)] = free_at;
}

bool KvRoutes::same_queue(int worker, int other) const {
  return queue_key(route(worker), worker) == queue_key(route(other), other);
}

void KvRoutes::observe(int worker, std::uint64_t bytes, std::int64_t took_ns) {
  const Route& r = route(worker);
  const std::int64_t modelled = r.expected_ns(bytes);
  const double measured = static_cast<double>(std::max<std::int64_t>(0, took_ns - r.delay_ns));
  // A moving average: one slow cache moves the estimate, a run of them sets it.
  constexpr double kWeight = 0.3;
  const auto learn = [&](std::map<int, double>& estimates, double sample) {
    auto [it, first] = estimates.try_emplace(queue_key(r, worker), sample);
    if (!first) it->second = (1 - kWeight) * it->second + kWeight * sample;
  };
  if (modelled > 0) {
    learn(slowdown_, std::max(1.0, measured / static_cast<double>(modelled)));
  } else if (bytes > 0) {
    // Loopback, which the emulator does not shape, still copies every byte
    // through this machine's CPUs: 0.7-3.5 Gbit/s measured for caches of
    // 10-140 MB on a sink's host, seconds for the largest, which an
    // estimate of 0 let past the SLO.
    learn(unshaped_ns_per_byte_, measured / static_cast<double>(bytes));
  }
}

}  // namespace wanlab::harness
