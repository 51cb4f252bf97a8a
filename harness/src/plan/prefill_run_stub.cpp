// TEMPORARY: minimal definitions of the prefill functions the branches
// prefill-config and prefill-sim implement, so that the real run links and
// runs before they land. Reverted after merging main.
#include <algorithm>
#include <cmath>
#include <random>

#include "wanlab/harness/experiment.hpp"
#include "wanlab/harness/prefill.hpp"
#include "wanlab/harness/record.hpp"

namespace wanlab::harness {

std::vector<Request> load_requests(const Experiment& experiment, std::int64_t horizon_ns) {
  std::vector<Request> out;
  const auto& a = experiment.prefill.arrivals;
  if (!a || a->rate_per_s <= 0) return out;
  std::mt19937_64 rng(a->seed ? a->seed : experiment.seed);
  std::exponential_distribution<double> gap(a->rate_per_s);
  const double mu = std::log(a->prompt_median);
  const double sigma = std::max(0.01, (std::log(a->prompt_p90) - mu) / 1.2816);
  std::lognormal_distribution<double> length(mu, sigma);
  double t = 0;
  for (int id = 0;; ++id) {
    t += gap(rng);
    if (t * 1e9 > static_cast<double>(horizon_ns)) break;
    out.push_back(Request{id, static_cast<std::int64_t>(t * 1e9), std::max(1, static_cast<int>(length(rng))), 100});
  }
  return out;
}

std::uint64_t prefill_ns(const Experiment& experiment, int tokens) {
  const auto& x = experiment.prefill.time_tokens;
  const auto& y = experiment.prefill.time_ms;
  if (x.size() < 2) return static_cast<std::uint64_t>(tokens) * 150'000;
  std::size_t i = 1;
  while (i + 1 < x.size() && x[i] < tokens) ++i;
  const double ms = y[i - 1] + (y[i] - y[i - 1]) * (tokens - x[i - 1]) / (x[i] - x[i - 1]);
  return static_cast<std::uint64_t>(std::max(0.1, ms) * 1e6);
}

std::uint64_t kv_bytes_per_token(const ServedModel& m) {
  return 2ull * static_cast<std::uint64_t>(m.layers) * static_cast<std::uint64_t>(m.kv_heads) * static_cast<std::uint64_t>(m.head_dim) *
         static_cast<std::uint64_t>(m.bytes_per_value);
}

std::uint64_t kv_message_bytes(const Experiment& experiment, int tokens) {
  return std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(static_cast<double>(kv_bytes_per_token(experiment.prefill.model)) * tokens * experiment.scale));
}

std::vector<std::vector<Window>> idle_offsets(const RunRecord& record, int iteration) {
  std::vector<std::vector<Window>> out(record.plan.workers.size());
  const auto start = record.iteration_start_ns.at(iteration);
  const auto end = record.iteration_end_ns.at(iteration);
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> busy(out.size());
  for (const Event& e : record.events)
    if (e.iteration == iteration && (e.kind == OpKind::forward || e.kind == OpKind::backward))
      busy[e.worker].emplace_back(e.start_ns, e.end_ns);
  for (std::size_t w = 0; w < out.size(); ++w) {
    auto& b = busy[w];
    std::sort(b.begin(), b.end());
    for (std::size_t i = 0; i < b.size(); ++i) {
      const auto next = i + 1 < b.size() ? b[i + 1].first : end;
      if (next > b[i].second) out[w].push_back(Window{static_cast<int>(w), b[i].second - start, next - start});
    }
  }
  return out;
}

std::vector<Window> predict_windows(const std::vector<std::vector<Window>>& offsets, std::int64_t at, std::int64_t min_ns) {
  std::vector<Window> out;
  for (const auto& worker : offsets)
    for (const Window& w : worker)
      if (w.end_ns - w.start_ns >= min_ns) out.push_back(Window{w.worker, at + w.start_ns, at + w.end_ns});
  return out;
}

std::vector<PredictionError> prediction_errors(const std::vector<Window>& predicted, const std::vector<std::vector<Window>>& actual,
                                               std::int64_t at, int iteration) {
  std::vector<PredictionError> out;
  for (const Window& p : predicted) {
    const Window* best = nullptr;
    std::int64_t best_overlap = 0;
    for (const Window& a : actual.at(p.worker)) {
      const auto overlap = std::min(p.end_ns, at + a.end_ns) - std::max(p.start_ns, at + a.start_ns);
      if (overlap > best_overlap) best_overlap = overlap, best = &a;
    }
    if (best)
      out.push_back(PredictionError{p.worker, iteration, at + best->start_ns - p.start_ns,
                                    (best->end_ns - best->start_ns) - (p.end_ns - p.start_ns)});
  }
  return out;
}

Admission::Admission(const Experiment& experiment, KvEstimate kv_estimate) : experiment_(&experiment), kv_estimate_(std::move(kv_estimate)) {}

void Admission::arrive(const Request& request) { waiting_.push_back(request); }

std::size_t Admission::waiting() const { return waiting_.size(); }

Admission::Decisions Admission::schedule(std::int64_t now, std::vector<Window>& windows) {
  Decisions d;
  const auto& cfg = experiment_->prefill;
  const auto slo = static_cast<std::int64_t>(cfg.ttft_slo_ns);
  const auto guard = static_cast<std::int64_t>(cfg.guard_ns);
  while (!waiting_.empty()) {
    std::size_t n = 0;
    int tokens = 0;
    while (n < waiting_.size() && (n == 0 || tokens + waiting_[n].prompt_tokens <= cfg.max_batch_tokens)) tokens += waiting_[n++].prompt_tokens;
    const auto duration = static_cast<std::int64_t>(prefill_ns(*experiment_, tokens));
    Window* best = nullptr;
    std::int64_t best_end = 0;
    for (Window& w : windows) {
      const auto start = std::max(w.start_ns, now);
      if (start + duration <= w.end_ns - guard && (!best || start + duration < best_end)) best = &w, best_end = start + duration;
    }
    const auto kv = kv_message_bytes(*experiment_, tokens);
    const auto first_token = best ? best_end + kv_estimate_(best->worker, kv) : 0;
    if (!best || first_token - waiting_.front().arrival_ns > slo) {
      std::erase_if(waiting_, [&](const Request& r) {
        if (now + duration - r.arrival_ns <= slo) return false;
        d.rejections.push_back(Rejection{r.id, now, "TTFT SLO cannot be met"});
        return true;
      });
      break;
    }
    Batch b;
    b.id = next_batch_++;
    for (std::size_t i = 0; i < n; ++i) b.requests.push_back(waiting_[i].id);
    b.tokens = tokens;
    b.chunks.push_back(Chunk{best->worker, best_end - duration, static_cast<std::uint64_t>(duration), 0, cfg.model.layers});
    b.kv_bytes = kv;
    b.predicted_first_token_ns = first_token;
    best->start_ns = best_end;
    waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<long>(n));
    d.batches.push_back(std::move(b));
  }
  return d;
}

}  // namespace wanlab::harness
