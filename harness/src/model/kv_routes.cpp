// KvRoutes (kv_routes.hpp): each worker's route to its decode host, and the
// queue, slowdown and lateness admission's estimate learns on it.
#include "wanlab/harness/model/kv_routes.hpp"
#include "wanlab/harness/model/link_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/link_rate.hpp"

namespace wanlab::harness {

std::int64_t KvRoutes::Route::wire_ns(std::uint64_t bytes) const {
  return std::isfinite(rate_bps) ? static_cast<std::int64_t>(std::llround(static_cast<double>(bytes) * 8e9 / rate_bps))
                                 : 0;
}

std::int64_t KvRoutes::Route::expected_ns(std::uint64_t bytes) const {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(wire_ns(bytes)) / share));
}

std::vector<KvRoutes::Span> KvRoutes::merged(std::vector<Span> intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  std::vector<Span> out;
  for (const Span& interval : intervals) {
    if (!out.empty() && interval.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, interval.end_ns);
    } else {
      out.push_back(interval);
    }
  }
  return out;
}

int decode_dc_of(const Experiment& experiment, const emulator::Scenario& scenario, int worker_dc) {
  return experiment.prefill.decode_local() ? worker_dc : scenario.dc_index(experiment.prefill.decode_dc);
}

std::string decode_host_name(const emulator::Scenario& scenario, int dc) {
  return scenario.dcs.at(static_cast<std::size_t>(dc)).name + "-0";
}

std::int64_t announce_lead_ns(std::int64_t pieces_ns, std::int64_t worker_control_delay_ns,
                              std::int64_t prefill_control_delay_ns) {
  return std::max<std::int64_t>(0, pieces_ns) + std::max<std::int64_t>(0, worker_control_delay_ns) +
         std::max<std::int64_t>(0, prefill_control_delay_ns);
}

KvRoutes::KvRoutes(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model)
    : plan_(&plan),
      dcs_(static_cast<int>(scenario.dcs.size())),
      temporal_sharing_(plan.experiment.temporal_sharing),
      lateness_horizon_ns_(static_cast<std::int64_t>(plan.experiment.prefill.ttft_slo_ns)) {
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
    route.link_bps = static_cast<double>(scenario.pair(src, decode).rate_bps) * experiment.scale;
    route.delay_ns = static_cast<std::int64_t>(rate.delay_ns);
    route.rate_bps = detail::alone_rate_bps(rate, cross ? experiment.streams : 1);
    if (model.free_communication) {
      route.rate_bps = std::numeric_limits<double>::infinity();
      route.delay_ns = 0;
    } else if (worker_plan.worker.host == decode_host_name(scenario, decode)) {
      // On the decode host itself: to the decode GPUs inside the server, each
      // of the worker's tp GPUs over its own NVLink ([prefill] intra_host_rate).
      route.rate_bps = experiment.parallel.tp * experiment.prefill.intra_host_bps * experiment.scale;
      route.delay_ns = 0;
    } else if (!cross) {
      route.link_index = src * dcs + src;  // the DC's own link, shared by its workers' caches
    }
    if (cross) {
      route.link = emulator::pair_name(scenario.dcs[static_cast<std::size_t>(src)].name,
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
  std::vector<std::int64_t> lead_of(static_cast<std::size_t>(dcs_));  // per DC, for its own link
  for (int dc = 0; dc < dcs_; ++dc) lead_of[static_cast<std::size_t>(dc)] = dc_lead_ns(dc);
  std::map<int, std::vector<Span>> busy;
  for (const Event& event : training.events) {
    if (event.kind != OpKind::send) continue;
    const Worker& from = plan_->workers[static_cast<std::size_t>(event.worker)].worker;
    const Worker& to = plan_->workers[static_cast<std::size_t>(event.peer)].worker;
    const auto delay = delay_of.find(from.dc * dcs_ + to.dc);
    if (delay == delay_of.end() || (!event.cross_dc && from.host == to.host)) continue;
    const std::int64_t lead = event.cross_dc ? 0 : lead_of[static_cast<std::size_t>(from.dc)];
    busy[delay->first].push_back({event.start_ns - lead, std::max(event.start_ns, event.end_ns - delay->second)});
  }
  for (auto& [link, spans] : busy) spans = merged(std::move(spans));
  return busy;
}

void KvRoutes::size_pieces(std::int64_t iteration_ns) {
  // Per link_index: training's sends that may find pieces ahead of them in an
  // iteration. On a WAN link its gated link slots; on a DC's own link every
  // send between two of its hosts (each is announced on its own).
  std::map<int, int> sends_on;
  for (const WorkerPlan& w : plan_->workers)
    for (const Op& op : w.ops) {
      if (op.kind != OpKind::send) continue;
      const Worker& to = plan_->workers[static_cast<std::size_t>(op.peer)].worker;
      if (op.cross_dc && op.link_slot >= 0) {
        int& slots = sends_on[w.worker.dc * dcs_ + to.dc];
        slots = std::max(slots, op.link_slot + 1);
      } else if (!op.cross_dc && to.host != w.worker.host) {
        ++sends_on[w.worker.dc * dcs_ + w.worker.dc];
      }
    }
  for (int worker = 0; worker < static_cast<int>(routes_.size()); ++worker) {
    Route& r = routes_[static_cast<std::size_t>(worker)];
    if (r.link_index < 0) continue;  // from the decode host: no link
    const auto sends = sends_on.find(r.link_index);
    const int per_iteration = sends == sends_on.end() ? 1 : std::max(1, sends->second);
    r.piece_bytes =
        bytes_in(worker, kKvCostOfIteration * static_cast<double>(iteration_ns) / 1e9 / (2.0 * per_iteration));
  }
}

std::int64_t KvRoutes::dc_lead_ns(int dc) const {
  std::int64_t lead = 0;
  for (const Route& r : routes_)
    if (r.link.empty() && r.link_index == dc * dcs_ + dc) lead = std::max(lead, 2 * r.wire_ns(r.piece_bytes));
  return lead;
}

std::uint64_t KvRoutes::bytes_in(int worker, double seconds) const {
  const double rate_bps = route(worker).link_bps;
  if (!(rate_bps > 0)) return kMaxPiece;
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(rate_bps / 8 * seconds), kMinPiece, kMaxPiece);
}

std::int64_t KvRoutes::piece_interval_ns(int worker) const {
  return route(worker).wire_ns(route(worker).piece_bytes) * 5 / 4;
}

void KvRoutes::leave_to_training(const RunRecord& training) {
  size_pieces(first_iteration_ns(training));
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
// Caches on a link queue per link; from the decode host itself per worker (its own NVLink).
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
  if (modelled <= 0) return 0;  // free communication
  return static_cast<std::int64_t>(std::llround(static_cast<double>(modelled) * slowdown(worker)));
}

std::int64_t KvRoutes::estimate_ns(int worker, std::uint64_t bytes, std::int64_t now_ns) const {
  const Route& r = route(worker);
  const auto queued = free_at_.find(queue_key(r, worker));
  const std::int64_t backlog = queued == free_at_.end() ? 0 : std::max<std::int64_t>(0, queued->second - now_ns);
  return r.delay_ns + wire_ns(worker, bytes) + backlog + margin_ns(worker, now_ns);
}

void KvRoutes::observe_lateness(int worker, std::int64_t late_ns, std::int64_t now_ns) {
  // Against the estimate without the margin (the prediction had it, about as
  // it is now): measured with it, a margin that worked would learn itself away.
  const std::int64_t without_margin = late_ns + margin_ns(worker, now_ns);
  std::vector<Lateness>& samples = lateness_[queue_key(route(worker), worker)];
  std::erase_if(samples, [&](const Lateness& s) { return s.at_ns < now_ns - lateness_horizon_ns_; });
  samples.push_back({now_ns, without_margin});
}

std::int64_t KvRoutes::margin_ns(int worker, std::int64_t now_ns) const {
  const auto it = lateness_.find(queue_key(route(worker), worker));
  if (it == lateness_.end()) return 0;
  const auto in_horizon = [&](const Lateness& sample) { return sample.at_ns >= now_ns - lateness_horizon_ns_; };
  const auto count = static_cast<std::size_t>(std::count_if(it->second.begin(), it->second.end(), in_horizon));
  // The sample that at most kLateShare of the others exceed: the largest of fewer than 1 / kLateShare.
  const auto above = static_cast<std::size_t>(std::floor(kLateShare * static_cast<double>(count)));
  std::vector<std::int64_t> recent;
  std::int64_t margin = 0;
  for (const Lateness& sample : it->second) {
    if (!in_horizon(sample)) continue;
    margin = std::max(margin, sample.late_ns);
    if (above > 0) recent.push_back(sample.late_ns);
  }
  if (above == 0) return margin;
  const auto at = recent.begin() + static_cast<std::ptrdiff_t>(recent.size() - 1 - above);
  std::nth_element(recent.begin(), at, recent.end());
  return std::max<std::int64_t>(0, *at);
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
  if (modelled <= 0) return;  // free communication: nothing to stretch
  // A moving average: one slow cache moves the estimate, a run of them sets it.
  constexpr double kWeight = 0.3;
  const double sample = std::max(1.0, measured / static_cast<double>(modelled));
  auto [it, first] = slowdown_.try_emplace(queue_key(r, worker), sample);
  if (!first) it->second = (1 - kWeight) * it->second + kWeight * sample;
}

}  // namespace wanlab::harness
