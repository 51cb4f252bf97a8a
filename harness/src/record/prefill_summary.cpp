// What results.json and compare report of BubbleTea: utilization with prefill,
// requests, TTFT, KV bytes per WAN link, prediction error, training delay.
#include <algorithm>
#include <cmath>
#include <map>

#include "record/record_internal.hpp"
#include "wanlab/base/stats.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {
namespace {

// base::percentile, with 0 for no values (reports hold numbers, not NaN).
double percentile_or_zero(const std::vector<double>& values, double p) {
  return values.empty() ? 0 : base::percentile(values, p);
}

// Per worker, per iteration: prefill span time within the iteration's bounds.
std::vector<std::vector<double>> prefill_busy_ns(const RunRecord& record,
                                                 const std::vector<detail::IterationSpan>& spans) {
  std::vector<std::vector<double>> busy(spans.size(), std::vector<double>(record.plan.workers.size(), 0));
  for (const PrefillSpan& span : record.prefill->spans) {
    if (span.worker < 0 || static_cast<std::size_t>(span.worker) >= record.plan.workers.size()) continue;
    auto first = std::partition_point(spans.begin(), spans.end(), [&](const detail::IterationSpan& iteration) {
      return iteration.end_ns <= span.start_ns;
    });
    for (auto iteration = first; iteration != spans.end() && iteration->start_ns < span.end_ns; ++iteration) {
      std::int64_t inside = std::min(span.end_ns, iteration->end_ns) - std::max(span.start_ns, iteration->start_ns);
      if (inside > 0)
        busy[static_cast<std::size_t>(iteration - spans.begin())][static_cast<std::size_t>(span.worker)] +=
            static_cast<double>(inside);
    }
  }
  return busy;
}

// Utilization per worker as summarize_run takes it: the mean over the
// iterations it uses of (training compute + prefill) / the iteration's wall.
void add_utilization(const RunRecord& record, PrefillSummary& summary) {
  std::vector<IterationSummary> iterations = summarize(record);
  RunSummary run = summarize_run(iterations);
  summary.mean_training_utilization = run.mean_gpu_utilization;
  std::size_t workers = record.plan.workers.size();
  summary.gpu_utilization.assign(workers, 0);
  if (iterations.empty() || workers == 0) return;
  std::vector<detail::IterationSpan> spans;
  for (const IterationSummary& iteration : iterations) spans.push_back(detail::iteration_span(record, iteration.index));
  std::vector<std::vector<double>> prefill =
      record.prefill ? prefill_busy_ns(record, spans)
                     : std::vector<std::vector<double>>(spans.size(), std::vector<double>(workers, 0));
  auto used = static_cast<std::size_t>(run.skipped_iterations);
  double count = static_cast<double>(iterations.size() - used);
  for (std::size_t k = used; k < iterations.size(); ++k) {
    double wall = static_cast<double>(spans[k].end_ns - spans[k].start_ns);
    for (std::size_t worker = 0; worker < workers; ++worker) {
      double extra = wall > 0 ? prefill[k][worker] / wall : 0;
      summary.gpu_utilization[worker] += (iterations[k].gpu_utilization[worker] + extra) / count;
    }
  }
  for (double utilization : summary.gpu_utilization)
    summary.mean_gpu_utilization += utilization / static_cast<double>(workers);
  // Served prompt tokens whose first token came within those iterations.
  detail::IterationSpan window{spans[used].start_ns, spans.back().end_ns};
  double wall = 0;
  for (std::size_t k = used; k < spans.size(); ++k) wall += static_cast<double>(spans[k].end_ns - spans[k].start_ns);
  if (!record.prefill || wall <= 0) return;
  double tokens = 0;
  for (const RequestOutcome& request : record.prefill->requests) {
    if (request.state == RequestState::served && request.first_token_ns >= window.start_ns &&
        request.first_token_ns < window.end_ns) {
      tokens += request.prompt_tokens;
    }
  }
  summary.prefill_tokens_per_s = tokens / (wall / 1e9);
}

void add_requests(const PrefillRecord& prefill, PrefillSummary& summary) {
  std::vector<double> ttft_s;
  for (const RequestOutcome& request : prefill.requests) {
    ++summary.requests;
    switch (request.state) {
      case RequestState::served:
        ++summary.served;
        ttft_s.push_back(static_cast<double>(request.first_token_ns - request.arrival_ns) / 1e9);
        break;
      case RequestState::rejected: ++summary.rejected; break;
      case RequestState::failed: ++summary.failed; break;
      case RequestState::unfinished: ++summary.unfinished; break;
    }
  }
  if (ttft_s.empty()) return;
  summary.ttft_p50_s = base::percentile(ttft_s, 50);
  summary.ttft_p90_s = base::percentile(ttft_s, 90);
  summary.ttft_p99_s = base::percentile(ttft_s, 99);
}

BubbleErrors percentiles_of(const std::vector<double>& start, const std::vector<double>& length) {
  return {percentile_or_zero(start, 50), percentile_or_zero(start, 90), percentile_or_zero(length, 50),
          percentile_or_zero(length, 90)};
}

void add_prediction(const PrefillRecord& prefill, PrefillSummary& summary) {
  std::vector<double> start_s;
  std::vector<double> length_s;
  std::vector<double> start_rel;
  std::vector<double> length_rel;
  for (const PredictionError& error : prefill.prediction) {
    const double start = std::abs(static_cast<double>(error.start_error_ns));
    const double length = std::abs(static_cast<double>(error.length_error_ns));
    start_s.push_back(start / 1e9);
    length_s.push_back(length / 1e9);
    if (error.predicted_ns <= 0) continue;
    start_rel.push_back(start / static_cast<double>(error.predicted_ns));
    length_rel.push_back(length / static_cast<double>(error.predicted_ns));
  }
  summary.prediction_error_s = percentiles_of(start_s, length_s);
  summary.prediction_error_relative = percentiles_of(start_rel, length_rel);
}

}  // namespace

std::string to_string(RequestState state) {
  switch (state) {
    case RequestState::served: return "served";
    case RequestState::rejected: return "rejected";
    case RequestState::failed: return "failed";
    case RequestState::unfinished: return "unfinished";
  }
  return "unknown";
}

PrefillSummary summarize_prefill(const RunRecord& record) {
  PrefillSummary summary;
  add_utilization(record, summary);
  if (!record.prefill) return summary;
  const PrefillRecord& prefill = *record.prefill;
  add_requests(prefill, summary);
  std::map<std::string, std::uint64_t> kv_bytes;
  for (const KvTransfer& transfer : prefill.kv) {
    if (!transfer.link.empty()) kv_bytes[transfer.link] += transfer.bytes;
  }
  summary.kv_bytes.assign(kv_bytes.begin(), kv_bytes.end());
  add_prediction(prefill, summary);
  for (std::int64_t delay : prefill.training_delay_ns) summary.training_delay_s += static_cast<double>(delay) / 1e9;
  return summary;
}

}  // namespace wanlab::harness
