// BubbleTea's progress so far, for the coordinator's per-iteration lines:
// utilization with prefill, requests served / waiting / rejected, TTFT p50.
#include <algorithm>

#include "prefill/prefill_service.hpp"

namespace wanlab::harness::run_detail {

std::optional<double> PrefillService::ttft_p50_s() const {
  std::vector<std::int64_t> ttft;
  for (const auto& [id, o] : outcomes_)
    if (o.state == RequestState::served) ttft.push_back(o.first_token_ns - o.arrival_ns);
  if (ttft.empty()) return std::nullopt;
  std::nth_element(ttft.begin(), ttft.begin() + static_cast<long>(ttft.size() / 2), ttft.end());
  return static_cast<double>(ttft[ttft.size() / 2]) / 1e9;
}

void PrefillService::fill(Progress& progress, const RunRecord& record) const {
  if (record.iteration_start_ns.empty()) return;
  const std::int64_t from = record.iteration_start_ns.front();
  const std::int64_t to = record.iteration_end_ns.back();
  double wall = 0, busy = 0;
  for (std::size_t i = 0; i < record.iteration_start_ns.size(); ++i)
    wall += static_cast<double>(record.iteration_end_ns[i] - record.iteration_start_ns[i]);
  for (const Event& e : record.events)
    if (e.kind == OpKind::forward || e.kind == OpKind::backward) busy += static_cast<double>(e.end_ns - e.start_ns);
  for (const PrefillSpan& s : record_.spans)
    busy += static_cast<double>(std::max<std::int64_t>(0, std::min(s.end_ns, to) - std::max(s.start_ns, from)));
  const auto workers = static_cast<double>(setup_.plan->workers.size());
  progress.utilization_with_prefill_so_far = wall > 0 ? busy / (wall * workers) : 0;
  int waiting = static_cast<int>(admission_->waiting());
  for (const auto& [id, o] : outcomes_) {
    if (o.state == RequestState::served) ++progress.requests_served;
    if (o.state == RequestState::rejected) ++progress.requests_rejected;
    if (o.state == RequestState::unfinished && o.batch >= 0) ++waiting;
  }
  progress.requests_waiting = waiting;
  progress.ttft_p50_s = ttft_p50_s();
}

}  // namespace wanlab::harness::run_detail
