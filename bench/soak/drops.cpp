#include "soak/drops.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "wanlab/emulator/tcp_window.hpp"

namespace wanlab::bench::soak {
namespace em = wanlab::emulator;

double QueueBound::backlog_bytes() const {
  return 2.0 * streams * (static_cast<double>(wmem_bytes) + 65536.0) * emulator::kFrameBytes /
         emulator::kSegmentPayloadBytes;
}

double QueueBound::backlog_ns() const {
  if (streams == 0) return 0;
  if (slowest_bps <= 0) return INFINITY;  // unlimited so far: no backlog, but be safe
  return backlog_bytes() * 8e9 / slowest_bps;
}

bool permits_loss(const wanlab_pair_config& config) {
  if (!(config.flags & WANLAB_PAIR_ENABLED)) return false;
  if (config.loss_model == WANLAB_LOSS_GILBERT_ELLIOTT) return config.ge_bad_loss32 != 0 || config.ge_good_loss32 != 0;
  return config.loss_p32 != 0;
}

bool permits_queue_drops(const wanlab_pair_config& config, const QueueBound& bound) {
  if (!(config.flags & WANLAB_PAIR_ENABLED) || config.queue_limit_ns == 0) return false;
  return static_cast<double>(config.queue_limit_ns) < bound.backlog_ns();
}

DropCounts& DropCounts::operator+=(const DropCounts& other) {
  queue_expected += other.queue_expected;
  queue_unexpected += other.queue_unexpected;
  loss_expected += other.loss_expected;
  loss_unexpected += other.loss_unexpected;
  return *this;
}

DropJudge::DropJudge(const em::TestbedState& state, int wan_streams, std::uint64_t wmem_bytes)
    : dcs_(static_cast<int>(state.dcs.size())), datapath_(em::Datapath::open_pinned(em::bpffs_dir(state.name))) {
  pairs_.resize(static_cast<std::size_t>(dcs_ * dcs_));
  for (int src = 0; src < dcs_; ++src) {
    for (int dst = 0; dst < dcs_; ++dst) {
      auto& pair = track(src, dst);
      pair.label = state.dcs[static_cast<std::size_t>(src)] + " -> " + state.dcs[static_cast<std::size_t>(dst)];
      pair.wan = src != dst;
      pair.bound.streams = pair.wan ? wan_streams : 0;
      pair.bound.wmem_bytes = wmem_bytes;
      pair.counters = datapath_->stats(src, dst);
    }
  }
  read_configs(false);
}

// Reads every pair's configuration back from the data plane. With `widen`,
// what it permits widens the current slice; otherwise a new slice starts with it.
void DropJudge::read_configs(bool widen) {
  for (int src = 0; src < dcs_; ++src) {
    for (int dst = 0; dst < dcs_; ++dst) {
      auto& pair = track(src, dst);
      pair.config = datapath_->pair(src, dst);
      const auto rate = static_cast<double>(pair.config.rate_bps);
      if (pair.config.rate_bps != 0)
        pair.bound.slowest_bps = pair.bound.slowest_bps == 0 ? rate : std::min(pair.bound.slowest_bps, rate);
      const bool loss = permits_loss(pair.config), queue = permits_queue_drops(pair.config, pair.bound);
      pair.loss_ok = widen ? pair.loss_ok || loss : loss;
      pair.queue_ok = widen ? pair.queue_ok || queue : queue;
    }
  }
}

DropCounts DropJudge::judge(PairTrack& pair, const wanlab_pair_stats& now, double t) {
  const std::uint64_t queue = now.drops[WANLAB_DROP_QUEUE] - pair.counters.drops[WANLAB_DROP_QUEUE];
  const std::uint64_t loss = now.drops[WANLAB_DROP_LOSS] - pair.counters.drops[WANLAB_DROP_LOSS];
  pair.counters = now;
  pair.slices++;
  pair.slices_queue_ruled_out += !pair.queue_ok;
  pair.slices_loss_ruled_out += !pair.loss_ok;
  DropCounts counts;
  (pair.queue_ok ? counts.queue_expected : counts.queue_unexpected) = queue;
  (pair.loss_ok ? counts.loss_expected : counts.loss_unexpected) = loss;
  pair.queue_expected += counts.queue_expected;
  pair.queue_unexpected += counts.queue_unexpected;
  pair.loss_expected += counts.loss_expected;
  pair.loss_unexpected += counts.loss_unexpected;
  if ((queue && !pair.queue_ok) || (loss && !pair.loss_ok))
    pair.unexplained.push_back(fmt::format(
        "t={:.0f}s: {} queue drop(s), {} loss drop(s); rate {:.0f} Mbit/s, queue limit {:.3f} s "
        "(backlog bound {:.3f} s), loss p32 {}",
        t, queue, loss, static_cast<double>(pair.config.rate_bps) / 1e6,
        static_cast<double>(pair.config.queue_limit_ns) / 1e9, pair.bound.backlog_ns() / 1e9, pair.config.loss_p32));
  return counts;
}

DropCounts DropJudge::end_slice(double t) {
  DropCounts slice;
  for (int src = 0; src < dcs_; ++src)
    for (int dst = 0; dst < dcs_; ++dst) slice += judge(track(src, dst), datapath_->stats(src, dst), t);
  read_configs(false);
  return slice;
}

wanlab_pair_stats DropJudge::wan_totals() const {
  wanlab_pair_stats total{};
  for (const auto& pair : pairs_) {
    if (!pair.wan) continue;
    total.packets += pair.counters.packets;
    total.bytes += pair.counters.bytes;
  }
  return total;
}

}  // namespace wanlab::bench::soak
