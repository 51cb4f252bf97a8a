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
#include "wanlab/harness/model/kv_routes.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/bubbletea/admission.hpp"
#include "wanlab/harness/model/link_model.hpp"

namespace wanlab::harness::detail {
namespace {

constexpr std::int64_t kPast = std::numeric_limits<std::int64_t>::min();

using Interval = KvRoutes::Span;

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
        experiment_, [this, &now](int worker, std::uint64_t bytes) { return routes_.estimate_ns(worker, bytes, now); },
        [this](int worker, std::int64_t ready_ns, std::uint64_t bytes) { routes_.queue(worker, ready_ns, bytes); });
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
    for (std::vector<Interval>& intervals : compute) intervals = KvRoutes::merged(std::move(intervals));
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
