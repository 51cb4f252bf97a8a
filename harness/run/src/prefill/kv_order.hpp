// How a prefill worker sends its KV caches: in what pieces (KvSendShape),
// and in which order (KvSendOrder): the order admission placed their batches (batch ids grow with placement).
// Admission's estimate for a cache (KvRoutes) counts the caches placed before it on its route and never one placed
// after; sent in the order prefill ended, a cache counted as early could wait behind later ones and miss its deadline.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "protocol/data_header.hpp"
#include "wanlab/harness/run/control.hpp"
#include "wanlab/transport/options.hpp"

namespace wanlab::harness::run_detail {

// One cache of `bytes` as its assignment has it sent: `pieces` messages of
// `piece_bytes` (the last one the rest), each after a grant when gated; or,
// from the decode host itself, no bytes at all: `timed_ns` of waiting (its
// NVLink's time) and then one header that stands for them.
struct KvSendShape {
  std::uint64_t piece_bytes = 0;  // zeros per piece on the wire; 0 when timed
  int pieces = 1;
  std::int64_t timed_ns = 0;
  std::uint64_t modelled_bytes = 0;
};

inline KvSendShape kv_send_shape(const control::PrefillAssign& assign, std::uint64_t bytes) {
  if (assign.intra_host_bps > 0) {
    const auto ns = static_cast<double>(bytes) * 8e9 / static_cast<double>(assign.intra_host_bps);
    return {0, 1, static_cast<std::int64_t>(ns + 0.5), bytes};
  }
  // Never more than this cache: a piece's size bounds the zeros kept to
  // send, and the largest cache of a run (its longest prompt's) can be
  // gigabytes, whose first touch once held a worker's KV back for 8-13 s.
  const std::uint64_t piece =
      assign.gated && assign.piece_bytes > 0 ? std::min(assign.piece_bytes, bytes) : std::max<std::uint64_t>(1, bytes);
  return {piece, static_cast<int>(std::max<std::uint64_t>(1, (bytes + piece - 1) / piece)), 0, 0};
}

// A DC's own link: the chunk (and unsent mark) of a worker whose pieces are
// `piece_bytes`, so that a piece and its header go into the socket in one
// write (PrefillService::assignment says why).
inline std::uint32_t dc_link_chunk_bytes(std::uint64_t piece_bytes) {
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(piece_bytes + kKvHeaderBytes, transport::kMinChunkSize, transport::kMaxChunkSize));
}

// A cache placed earlier on a shared route whose prefill has not ended, as
// the gate sees it (times on one clock).
struct EarlierCache {
  std::int64_t predicted_ready_ns = 0;  // its prefill's predicted end
  std::int64_t delay_ns = 0;            // the route's
  std::int64_t wire_ns = 0;             // its bytes at the route's learned rate
  std::int64_t margin_ns = 0;           // the route's lateness margin (KvRoutes::margin_ns)
  std::int64_t deadline_ns = 0;         // its batch's TTFT deadline
};

// Whether a ready cache that holds the route for `own_wire_ns` from `now_ns`
// may go ahead of `earlier`: only if that one still arrives by its deadline
// behind it, from its predicted prefill end or from when this one is done,
// whichever is later.
inline bool may_go_ahead(std::int64_t now_ns, std::int64_t own_wire_ns, const EarlierCache& earlier) {
  const std::int64_t starts = std::max(now_ns + own_wire_ns, earlier.predicted_ready_ns);
  return starts + earlier.delay_ns + earlier.wire_ns + earlier.margin_ns <= earlier.deadline_ns;
}

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
