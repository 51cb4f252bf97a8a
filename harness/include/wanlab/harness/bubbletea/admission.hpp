// Admission: batches of waiting requests placed into predicted idle windows
// (bubbles.hpp), each admitted only if its first token can meet the TTFT SLO.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"

namespace wanlab::harness {

struct Experiment;

// A piece of a batch's prefill on one worker: layers [first_layer, end_layer)
// in [start_ns, start_ns + duration_ns). A batch that no single window holds
// may be split into layer chunks over several windows of one worker.
struct Chunk {
  int worker = 0;
  std::int64_t start_ns = 0;
  std::uint64_t duration_ns = 0;
  int first_layer = 0;
  int end_layer = 0;
  std::int64_t end_ns() const { return start_ns + static_cast<std::int64_t>(duration_ns); }
};

struct Batch {
  int id = 0;
  std::vector<int> requests;  // Request ids
  int tokens = 0;
  std::vector<Chunk> chunks;                  // in time order, all on one worker
  std::uint64_t kv_bytes = 0;                 // kv_message_bytes(tokens)
  std::int64_t predicted_first_token_ns = 0;  // last chunk's end + KV transfer estimate
};

struct Rejection {
  int request = 0;
  std::int64_t at_ns = 0;
  std::string reason;  // "TTFT SLO of 3 s cannot be met", "prompt longer than ..."
};

// KV transfer time estimate from `worker` to the decode DC for `bytes`
// (delay + bytes / rate of the pair, scaled). Given by the runner.
using KvEstimate = std::function<std::int64_t(int worker, std::uint64_t bytes)>;
// A batch was placed: its cache of `bytes` leaves `worker` once its prefill
// ends at `ready_ns`. The runner queues it on the route (KvRoutes::queue), so
// that the estimates of batches placed after it, in the same schedule() call
// too, count it.
using KvPlaced = std::function<void(int worker, std::int64_t ready_ns, std::uint64_t bytes)>;

// Places requests, in arrival order, into predicted windows.
// - Batches: FIFO. A batch takes the first waiting request and those after it
//   while the tokens stay within max_batch_tokens (a longer prompt is a batch
//   alone). If that batch cannot be placed, its longest placeable prefix is
//   (a binary search: fewer requests never place worse); if not even its first
//   request can, that request keeps waiting for a later prediction and the
//   next one heads a batch.
// - Placement: a chunk lies in [max(window start, now), window end - guard).
//   The batch goes to the single window, of any worker, where its first token
//   (prefill end + kv_estimate(worker, kv_bytes)) comes earliest. Only if no
//   single window holds it is it split into layer chunks: whole layers, filled
//   greedily into that worker's windows in time order (windows too short for
//   one layer are skipped), on the one worker where the last chunk's first
//   token comes earliest. Layers [f, e) of a prefill of P ns over L layers take
//   ceil(P e / L) - ceil(P f / L): each chunk at most 1 ns over its share, and
//   the chunks sum to P exactly.
// - Admitted only if the first token is within ttft_slo of every request's arrival.
// - Rejected, at a schedule() call, is a waiting request for which
//   now + prefill_ns(its prompt) + the least kv_estimate over the workers
//   passes arrival + ttft_slo: even alone, on an idle GPU, it is too late.
// - Used window time is consumed: what is left of a window is the part after
//   the chunk. A worker's windows must not overlap each other.
// Cost: one pass over the windows, sorted by start, per placement attempt,
// stopping at the first window that can no longer beat the best placement
// found or meet the deadline.
class Admission {
 public:
  // Keeps a pointer to `experiment`: it must outlive the Admission.
  Admission(const Experiment& experiment, KvEstimate kv_estimate, KvPlaced kv_placed = {});

  void arrive(const Request& request);
  // The windows from `now_ns` on (consumed as batches take them: the caller
  // keeps passing the same vector until it gives a new prediction). Windows
  // with no room left are removed and the rest sorted by start.
  struct Decisions {
    std::vector<Batch> batches;
    std::vector<Rejection> rejections;
  };
  Decisions schedule(std::int64_t now_ns, std::vector<Window>& windows);
  std::size_t waiting() const;

 private:
  struct Waiting {
    Request request;
    std::int64_t best_case_ns = 0;  // prefill alone + the least KV estimate
  };
  int workers() const;
  std::vector<std::int64_t> kv_times(int tokens) const;  // kv_estimate per worker
  void reject_hopeless(std::int64_t now_ns, std::vector<Rejection>& rejections);
  std::size_t batch_end(std::size_t head) const;
  std::optional<Batch> try_place(std::size_t head, std::size_t end, std::int64_t now_ns,
                                 const std::vector<Window>& windows, std::vector<Window>* consume_from);
  std::optional<Batch> place_longest(std::size_t head, std::size_t end, std::int64_t now_ns,
                                     std::vector<Window>& windows);

  const Experiment* experiment_;
  KvEstimate kv_estimate_;
  KvPlaced kv_placed_;
  std::vector<Waiting> waiting_;  // in arrival order
  int next_batch_ = 0;
};

}  // namespace wanlab::harness
