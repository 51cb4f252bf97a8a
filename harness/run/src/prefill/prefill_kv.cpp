// BubbleTea's KV caches, as the prefill service handles them: each
// worker's route and assignment, the gate that gives a link to one piece at
// a time while training's sends leave it free, and the caches' arrivals,
// which admission's route estimates learn from.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>

#include "prefill/kv_order.hpp"
#include "protocol/data_ports.hpp"
#include "prefill/prefill_service.hpp"
#include "wanlab/harness/run/gpu.hpp"
#include "wanlab/harness/bubbletea/admission.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/model/kv_routes.hpp"
#include "wanlab/harness/model/served_model.hpp"
#include "wanlab/harness/model/tcp_model.hpp"
#include "wanlab/transport/options.hpp"

namespace wanlab::harness::run_detail {
namespace ctl = control;

namespace {

// The GPU time a prefill worker holds at once, at least (with a guard of 0).
constexpr std::uint64_t kMinStepNs = 1'000'000;

}  // namespace

ctl::SinkAssign PrefillService::sink_assignment(int index) const {
  const Sink& sink = sink_at(index);
  // The sink sends nothing: its chunk size is any (each channel's sender chooses its own).
  return {sink.host->ipv4, kSinkPort, transport::kDefaultChunkSize, largest_kv_bytes(), sink.senders};
}

// Whether `worker`'s KV caches go over its DC's own link (to a sink on
// another host of its DC), which every such worker of the DC shares.
bool PrefillService::on_dc_link(int worker) const {
  return link_of(worker).empty() && setup_.plan->workers[worker].worker.host != sinks_[sink_of_[worker]].host->name;
}

// What a KV piece of `worker` holds while it is on the wire: its WAN link, or
// its DC's own link; empty over loopback.
std::string PrefillService::kv_link(int worker) const {
  if (on_dc_link(worker)) return inside_link(setup_.plan->workers[worker].worker.dc_name);
  return link_of(worker);
}

ctl::PrefillAssign PrefillService::assignment(int worker) const {
  ctl::PrefillAssign a;
  a.worker = worker;
  a.gpu_lease = lease_path(worker);
  a.sink = sink_of_[worker];
  a.sink_ipv4 = sinks_[sink_of_[worker]].host->ipv4;
  a.sink_port = kSinkPort;
  const bool cross = !link_of(worker).empty();
  a.streams = cross ? std::max(1, experiment_.streams) : 1;
  // Temporal sharing protects training's gated sends: a link without any
  // needs no gate. On a DC's own link the caches of its workers go one
  // whole cache at a time, as admission's estimate (KvRoutes) and the
  // simulator take them: sent side by side, each took twice its modelled
  // time, which admission learned as a slower link on top of the queue it
  // already counts, and placed half the prefill it could (bubbletea-3dc-local:
  // 41-52% utilization on those workers, 88-91% on the sinks' hosts). They go
  // in pieces there too, which leave the link to training's announced sends.
  const bool dc_link = on_dc_link(worker);
  a.gated = (cross && experiment_.temporal_sharing && setup_.gate->carries(link_of(worker))) || dc_link;
  // Small chunks where a piece's "written" hands a WAN link back to
  // training; over loopback bulk. On a DC's own link a piece is one chunk,
  // taken by the socket whole, and released as soon as it is written, so
  // that the next grant's round trip overlaps the piece on the wire: in
  // chunks of a quarter piece the release came as the last bytes left, and
  // outside training's holds caches took 1.22 times their wire time against
  // 1.00 simulated (the demo, 2026-12-02; 1.11 so). What waits on the link
  // at an announcement stays about one piece: measured, the socket never
  // held more than one (whole caches in 256 KB chunks held the gradients
  // between a DC's hosts back by up to 0.3 s: bubbletea-3dc-local,
  // 2026-11-23 20:42).
  a.chunk_size = transport::kDefaultChunkSize;
  a.not_sent_lowat = ctl::kBulkUnsentLowat;
  if (cross) {
    a.piece_bytes = kv_routes_->route(worker).piece_bytes;
    if (a.gated) a.chunk_size = a.not_sent_lowat = kCrossDcChunkBytes;
  } else if (dc_link) {
    a.piece_bytes = kv_routes_->route(worker).piece_bytes;
    a.chunk_size = a.not_sent_lowat = dc_link_chunk_bytes(a.piece_bytes);
  } else {
    a.piece_bytes = largest_kv_bytes();
    // On its decode host: timed at its NVLink's rate, its bytes not sent (a
    // real server would not move them through this box's CPUs: over loopback
    // they took 0.7-3.5 Gbit/s of them, seconds for the largest caches).
    const double rate_bps = kv_routes_->route(worker).rate_bps;
    if (std::isfinite(rate_bps)) a.intra_host_bps = static_cast<std::uint64_t>(std::max(1.0, rate_bps));
  }
  a.max_kv_bytes = largest_kv_bytes();
  a.step_ns = std::max(kMinStepNs, experiment_.prefill.guard_ns);
  return a;
}

// The largest batch's KV: max_batch_tokens, or a longer prompt that goes alone.
std::uint64_t PrefillService::largest_kv_bytes() const {
  int tokens = experiment_.prefill.max_batch_tokens;
  for (const Request& r : requests_) tokens = std::max(tokens, r.prompt_tokens);
  return kv_message_bytes(experiment_, tokens);
}

// The KV route's wire time (kv_routes_: the rate one transfer gets alone).
std::int64_t PrefillService::kv_wire_ns(int worker, std::uint64_t bytes) const {
  return kv_routes_->route(worker).wire_ns(bytes);
}

// The sink's word and the worker's KvSent come over two connections in
// either order; a cache is counted once both are in, so that its time is
// measured from its first byte's turn (taken as 0 it told admission the
// route was faster than the model, 4 caches of 20 on bt-latency).
void PrefillService::kv_arrived(const ctl::KvArrived& arrived) {
  const auto it = batches_.find(arrived.batch);
  if (it == batches_.end()) throw ctl::ControlError(fmt::format("KV of unknown batch {} arrived", arrived.batch));
  BatchState& b = it->second;
  if (b.kv_start_ns < 0 && !processes_[arrived.worker].gone) {
    b.arrived = arrived;
    return;
  }
  kv_done(b, arrived);
}

void PrefillService::kv_sent(int worker, const ctl::KvSent& sent) {
  if (const auto on = kv_cache_on_.find(kv_link(worker)); on != kv_cache_on_.end() && on->second == sent.batch) {
    kv_cache_on_.erase(on);
    grant_kv();
  }
  const auto it = batches_.find(sent.batch);
  if (it == batches_.end()) return;
  BatchState& b = it->second;
  b.kv_start_ns = sent.start_ns;
  if (!b.arrived) return;
  const ctl::KvArrived arrived = *b.arrived;
  b.arrived.reset();
  kv_done(b, arrived);
}

void PrefillService::kv_done(BatchState& b, const ctl::KvArrived& arrived) {
  const bool timed = b.kv_start_ns >= 0;
  const std::int64_t start = timed ? b.kv_start_ns : arrived.at_ns;
  record_.kv.push_back(KvTransfer{b.batch.id, arrived.worker, link_of(arrived.worker), arrived.bytes,
                                  start - origin_ns_, arrived.at_ns - origin_ns_, b.batch.predicted_first_token_ns,
                                  batch_deadline(b.batch)});
  // Admission's next estimates on this route learn how long caches really
  // take, and how late they came against its prediction.
  if (timed) kv_routes_->observe(arrived.worker, arrived.bytes, arrived.at_ns - start);
  kv_routes_->observe_lateness(arrived.worker, arrived.at_ns - origin_ns_ - b.batch.predicted_first_token_ns,
                               arrived.at_ns - origin_ns_);
  if (!b.over) {  // else failed meanwhile: its requests stay failed
    b.over = true;
    for (int id : b.batch.requests) {
      RequestOutcome& o = outcome(id);
      o.state = RequestState::served;
      o.first_token_ns = arrived.at_ns - origin_ns_;
    }
  }
  requeue_kv(arrived.worker);
}

// The route's queue from what still waits for it: every placed batch whose
// cache has not arrived, on a route shared with `worker`'s, from its
// predicted prefill end.
void PrefillService::requeue_kv(int worker) {
  std::vector<KvRoutes::Waiting> waiting;
  for (const auto& [id, b] : batches_) {
    const Chunk& last = b.batch.chunks.back();
    if (b.over || b.arrived || b.kv_start_ns >= 0 || !kv_routes_->same_queue(worker, last.worker)) continue;
    waiting.push_back({last.worker, last.end_ns(), b.batch.kv_bytes});
  }
  kv_routes_->requeue(worker, monotonic_ns() - origin_ns_, std::move(waiting));
}

// Temporal sharing: one KV piece per link, and only while training neither
// holds nor waits for the link; training's next send takes it back at the
// next piece boundary.
void PrefillService::link_changed() { grant_kv(); }

// Caches take a gated link in the order admission placed their batches, as
// each worker sends its own (KvSendOrder): admission's estimate (KvRoutes)
// counts the caches placed before a cache on its route, never one placed
// after it. A ready cache goes ahead of an earlier one whose prefill has not
// ended only where that one still makes its deadline behind it, at the wire
// times and lateness margin the route has learned: strictly in order, a
// prefill that slipped held every later cache of its DC's link back
// (three-dc at 10 Gbit/s, CodeLlama-34B caches: caches waited up to 2.5 s
// after their prefill ended, and 7 of 410 served requests came 0.3-1.2 s
// past the 3 s SLO).
bool PrefillService::kv_turn(int worker, int batch, int piece) {
  if (piece > 0) return true;
  const std::int64_t now = monotonic_ns() - origin_ns_;
  const std::int64_t own_ns = kv_routes_->wire_ns(worker, batches_.at(batch).batch.kv_bytes);
  for (const auto& [id, b] : batches_) {
    if (id >= batch) break;
    if (b.over || b.kv_begun || b.kv_start_ns >= 0 || !kv_routes_->same_queue(worker, b.batch.chunks.back().worker))
      continue;
    if (kv_requested(id)) return false;  // ready too, and placed first
    const Chunk& last = b.batch.chunks.back();
    const EarlierCache earlier{last.end_ns(), kv_routes_->route(last.worker).delay_ns,
                               kv_routes_->wire_ns(last.worker, b.batch.kv_bytes),
                               kv_routes_->margin_ns(last.worker, now), batch_deadline(b.batch)};
    if (!may_go_ahead(now, own_ns, earlier)) return false;
  }
  return true;
}

bool PrefillService::kv_requested(int batch) const {
  return std::any_of(kv_waiting_.begin(), kv_waiting_.end(), [&](const KvWaiter& w) { return w.batch == batch; });
}

void PrefillService::grant_kv() {
  const std::int64_t now = monotonic_ns();
  for (auto it = kv_waiting_.begin(); it != kv_waiting_.end();) {
    const std::string link = kv_link(it->worker);
    // On a DC's own link a cache, once begun, has the link to itself until its last piece.
    const auto cache_on = kv_cache_on_.find(link);
    const bool other_cache = cache_on != kv_cache_on_.end() && cache_on->second != it->batch;
    if (kv_holding_.count(link) || other_cache || setup_.gate->in_use(link) ||
        !kv_turn(it->worker, it->batch, it->piece)) {
      ++it;
      continue;
    }
    if (const auto next = kv_next_grant_[link]; now < next) {
      if (kv_wakes_.insert(link).second) asio::co_spawn(*setup_.io, wake_kv(link, next), asio::detached);
      ++it;
      continue;
    }
    kv_holding_[link] = *it;
    batches_.at(it->batch).kv_begun = true;
    if (on_dc_link(it->worker))
      kv_cache_on_[link] = it->batch;
    else
      kv_next_grant_[link] = now + kv_routes_->piece_interval_ns(it->worker);
    processes_[it->worker].control->post(ctl::KvGateGrant{it->batch, it->piece});
    it = kv_waiting_.erase(it);
  }
}

asio::awaitable<void> PrefillService::wake_kv(std::string link, std::int64_t at_ns) {
  co_await sleep_until_ns(at_ns);
  kv_wakes_.erase(link);
  if (!stopping_) grant_kv();
}

}  // namespace wanlab::harness::run_detail
