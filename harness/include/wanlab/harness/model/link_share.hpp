// How the transfers on one link share it, each from its cap (what it would
// push alone: its pacing rate, or its window's rate), as the simulator takes
// it (docs/SIMULATOR.md, "Sharing"). `Item`: any type with double cap_bps
// and rate_bps; each item's rate_bps is set.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace wanlab::harness {

// Max-min fair shares of `capacity_bps` (a fair queue per flow): equal
// shares, except that a capped item leaves what it cannot use to the
// others. Sorts `items` by cap.
template <class Item>
void share_max_min(double capacity_bps, std::vector<Item*>& items) {
  std::sort(items.begin(), items.end(), [](const Item* a, const Item* b) { return a->cap_bps < b->cap_bps; });
  double left = capacity_bps;
  std::size_t remaining = items.size();
  for (Item* item : items) {
    const double share = left / static_cast<double>(remaining);  // inf when the link is unlimited
    item->rate_bps = std::min(item->cap_bps, share);
    if (std::isfinite(left)) left = std::max(0.0, left - item->rate_bps);
    --remaining;
  }
}

// A drop-tail FIFO's shares (the emulator's queue per DC pair): where the
// items push more than `capacity_bps` together, each gets its part in
// proportion to what it pushes, as its packets hold that part of the queue;
// otherwise each its cap. Behind a standing queue a channel whose window is
// half another's gets half its share, where max-min would give it an equal
// one. An unlimited link or cap: max-min.
template <class Item>
void share_fifo(double capacity_bps, std::vector<Item*>& items) {
  double pushed_bps = 0;
  for (const Item* item : items) pushed_bps += item->cap_bps;
  if (!std::isfinite(pushed_bps) || !std::isfinite(capacity_bps)) return share_max_min(capacity_bps, items);
  const double scale = pushed_bps > capacity_bps ? capacity_bps / pushed_bps : 1.0;
  for (Item* item : items) item->rate_bps = item->cap_bps * scale;
}

}  // namespace wanlab::harness
