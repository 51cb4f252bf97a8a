// The order in which a prefill worker sends its KV caches: the order
// admission placed their batches (batch ids grow with placement). Admission's
// estimate for a cache (KvRoutes) counts the caches placed before it on its
// route and never one placed after; sent in the order prefill ended, a cache
// counted as early could wait behind later ones and miss its deadline.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace wanlab::harness::run_detail {

class KvSendOrder {
 public:
  // A batch whose KV this worker will send, in placement order.
  void placed(int batch) { caches_.try_emplace(batch); }
  // Its prefill ended: `bytes` of KV to send.
  void ready(int batch, std::uint64_t bytes) { caches_[batch] = bytes; }
  // It will never be sent (its prefill missed): no longer waited for.
  void dropped(int batch) { caches_.erase(batch); }
  // The earliest placed cache, taken off, once its prefill has ended; none
  // while it is still in prefill, however many later ones are ready.
  std::optional<std::pair<int, std::uint64_t>> take() {
    if (caches_.empty() || !caches_.begin()->second) return std::nullopt;
    const std::pair<int, std::uint64_t> next{caches_.begin()->first, *caches_.begin()->second};
    caches_.erase(caches_.begin());
    return next;
  }
  bool can_take() const { return !caches_.empty() && caches_.begin()->second.has_value(); }

 private:
  std::map<int, std::optional<std::uint64_t>> caches_;  // by batch id: bytes once ready
};

}  // namespace wanlab::harness::run_detail
