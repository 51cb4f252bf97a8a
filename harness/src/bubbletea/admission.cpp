// Admission: FIFO batches of waiting requests placed into predicted idle
// windows, in one pass over the windows sorted by start per attempt.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/bubbletea/admission.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/model/served_model.hpp"

namespace wanlab::harness {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

bool earlier(const Window& a, const Window& b) {
  return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.worker < b.worker;
}

// Layers [0, k) of a prefill of `total` ns over `layers` layers take
// ceil(total x k / layers): a chunk [f, e) takes cumulative(e) - cumulative(f),
// so chunks are whole nanoseconds, each at most 1 ns over its exact share, and
// sum to the whole prefill time.
std::int64_t cumulative(std::int64_t total, int layers, int k) { return (total * k + layers - 1) / layers; }

// The most layers from `first` on that fit in `capacity` ns: the largest e with
// cumulative(e) <= cumulative(first) + capacity, i.e. total x e <= X x layers.
int fitting_end(std::int64_t total, int layers, int first, std::int64_t capacity) {
  if (total == 0) return layers;
  std::int64_t limit = cumulative(total, layers, first) + std::min(capacity, total);
  return static_cast<int>(std::min<std::int64_t>(layers, limit * layers / total));
}

struct Candidate {
  std::int64_t first_token_ns = kNever;
  std::vector<Chunk> chunks;
  std::vector<std::size_t> windows;  // index of each chunk's window
  bool found() const { return first_token_ns != kNever; }
};

// What one attempt to place a batch needs to know.
struct Job {
  std::int64_t prefill_ns = 0;
  int layers = 1;
  std::vector<std::int64_t> kv_ns;  // per worker
  std::int64_t min_kv_ns = 0;
  std::int64_t deadline_ns = 0;  // every request's first token by then
  std::int64_t now_ns = 0;
  std::int64_t guard_ns = 0;
};

// A batch's layer chunks on one worker so far, greedily filling its windows
// in time order from `now` (the earliest finish on that worker).
struct Split {
  Candidate placement;
  int next_layer = 0;
};

void consider_single(const Job& job, const Window& window, std::size_t index, std::int64_t start, Candidate& best) {
  std::int64_t first_token = start + job.prefill_ns + job.kv_ns[static_cast<std::size_t>(window.worker)];
  if (first_token > job.deadline_ns || first_token >= best.first_token_ns) return;
  best.first_token_ns = first_token;
  best.chunks = {Chunk{window.worker, start, static_cast<std::uint64_t>(job.prefill_ns), 0, job.layers}};
  best.windows = {index};
}

void extend_split(const Job& job, const Window& window, std::size_t index, std::int64_t start, std::int64_t capacity,
                  Split& split, Candidate& best) {
  int first = split.next_layer;
  if (first == job.layers) return;  // done on this worker already
  int end = fitting_end(job.prefill_ns, job.layers, first, capacity);
  if (end <= first) return;  // not even one layer fits
  std::int64_t duration = cumulative(job.prefill_ns, job.layers, end) - cumulative(job.prefill_ns, job.layers, first);
  split.placement.chunks.push_back(Chunk{window.worker, start, static_cast<std::uint64_t>(duration), first, end});
  split.placement.windows.push_back(index);
  split.next_layer = end;
  if (end < job.layers) return;
  std::int64_t first_token = start + duration + job.kv_ns[static_cast<std::size_t>(window.worker)];
  if (first_token <= job.deadline_ns && first_token < best.first_token_ns) {
    best = split.placement;
    best.first_token_ns = first_token;
  }
}

// One pass over the windows (sorted by start): the single window where the
// batch's first token comes earliest, or else the earliest greedy layer split
// on one worker. Stops once no later window can do better or meet the deadline.
Candidate place(const Job& job, const std::vector<Window>& windows) {
  Candidate single;
  Candidate split;
  std::vector<Split> splits(job.kv_ns.size());
  for (std::size_t index = 0; index < windows.size(); ++index) {
    const Window& window = windows[index];
    std::int64_t start = std::max(window.start_ns, job.now_ns);
    if (start + job.min_kv_ns > job.deadline_ns) break;
    if (single.found() && start + job.prefill_ns + job.min_kv_ns >= single.first_token_ns) break;
    std::int64_t capacity = window.end_ns - job.guard_ns - start;
    if (capacity <= 0 || window.worker < 0 || static_cast<std::size_t>(window.worker) >= splits.size()) continue;
    if (capacity >= job.prefill_ns) consider_single(job, window, index, start, single);
    if (!single.found())
      extend_split(job, window, index, start, capacity, splits[static_cast<std::size_t>(window.worker)], split);
  }
  return single.found() ? single : split;
}

// Takes each chunk's time out of its window: what is left of a window is the
// part after the chunk (the part before it lies before `now`).
void consume(std::vector<Window>& windows, const Candidate& placement) {
  for (std::size_t i = placement.chunks.size(); i-- > 0;) {
    const Chunk& chunk = placement.chunks[i];
    auto at = windows.begin() + static_cast<std::ptrdiff_t>(placement.windows[i]);
    Window rest{at->worker, chunk.end_ns(), at->end_ns};
    windows.erase(at);
    if (rest.end_ns > rest.start_ns)
      windows.insert(std::upper_bound(windows.begin(), windows.end(), rest, earlier), rest);
  }
}

}  // namespace

Admission::Admission(const Experiment& experiment, KvEstimate kv_estimate, KvPlaced kv_placed)
    : experiment_(&experiment), kv_estimate_(std::move(kv_estimate)), kv_placed_(std::move(kv_placed)) {}

std::size_t Admission::waiting() const { return waiting_.size(); }

int Admission::workers() const { return std::max(1, experiment_->parallel.pp * experiment_->parallel.dp); }

std::vector<std::int64_t> Admission::kv_times(int tokens) const {
  std::uint64_t bytes = kv_message_bytes(*experiment_, tokens);
  std::vector<std::int64_t> times;
  for (int worker = 0; worker < workers(); ++worker) times.push_back(kv_estimate_(worker, bytes));
  return times;
}

void Admission::arrive(const Request& request) {
  std::vector<std::int64_t> kv = kv_times(request.prompt_tokens);
  std::int64_t best = static_cast<std::int64_t>(prefill_ns(*experiment_, request.prompt_tokens)) +
                      *std::min_element(kv.begin(), kv.end());
  waiting_.push_back({request, best});
}

void Admission::reject_hopeless(std::int64_t now_ns, std::vector<Rejection>& rejections) {
  std::int64_t slo = static_cast<std::int64_t>(experiment_->prefill.ttft_slo_ns);
  std::erase_if(waiting_, [&](const Waiting& waiting) {
    if (now_ns + waiting.best_case_ns <= waiting.request.arrival_ns + slo) return false;
    rejections.push_back(
        {waiting.request.id, now_ns, fmt::format("TTFT SLO of {:g} s cannot be met", static_cast<double>(slo) / 1e9)});
    return true;
  });
}

// Requests [head, end): the head, then those after it while the tokens fit.
std::size_t Admission::batch_end(std::size_t head) const {
  long tokens = waiting_[head].request.prompt_tokens;
  std::size_t end = head + 1;
  while (end < waiting_.size() &&
         tokens + waiting_[end].request.prompt_tokens <= experiment_->prefill.max_batch_tokens) {
    tokens += waiting_[end++].request.prompt_tokens;
  }
  return end;
}

std::optional<Batch> Admission::try_place(std::size_t head, std::size_t end, std::int64_t now_ns,
                                          const std::vector<Window>& windows, std::vector<Window>* consume_from) {
  Batch batch;
  std::int64_t deadline = kNever;
  for (std::size_t i = head; i < end; ++i) {
    batch.requests.push_back(waiting_[i].request.id);
    batch.tokens += waiting_[i].request.prompt_tokens;
    deadline = std::min(deadline,
                        waiting_[i].request.arrival_ns + static_cast<std::int64_t>(experiment_->prefill.ttft_slo_ns));
  }
  Job job;
  job.prefill_ns = static_cast<std::int64_t>(prefill_ns(*experiment_, batch.tokens));
  job.layers = std::max(1, experiment_->prefill.model.layers);
  job.kv_ns = kv_times(batch.tokens);
  job.min_kv_ns = *std::min_element(job.kv_ns.begin(), job.kv_ns.end());
  job.deadline_ns = deadline;
  job.now_ns = now_ns;
  job.guard_ns = static_cast<std::int64_t>(experiment_->prefill.guard_ns);
  Candidate placement = place(job, windows);
  if (!placement.found()) return std::nullopt;
  if (consume_from != nullptr) consume(*consume_from, placement);
  batch.chunks = std::move(placement.chunks);
  batch.kv_bytes = kv_message_bytes(*experiment_, batch.tokens);
  batch.predicted_first_token_ns = placement.first_token_ns;
  return batch;
}

// The longest prefix [head, k) of the FIFO batch [head, end) that can be
// placed: feasibility only grows as requests leave a batch (less prefill,
// less KV, a later or equal deadline), so a binary search finds it.
std::optional<Batch> Admission::place_longest(std::size_t head, std::size_t end, std::int64_t now_ns,
                                              std::vector<Window>& windows) {
  if (std::optional<Batch> whole = try_place(head, end, now_ns, windows, &windows)) return whole;
  if (end == head + 1 || !try_place(head, head + 1, now_ns, windows, nullptr)) return std::nullopt;
  std::size_t fits = head + 1;  // [head, fits) can be placed, [head, fails) cannot
  std::size_t fails = end;
  while (fails - fits > 1) {
    std::size_t middle = fits + (fails - fits) / 2;
    (try_place(head, middle, now_ns, windows, nullptr) ? fits : fails) = middle;
  }
  return try_place(head, fits, now_ns, windows, &windows);
}

Admission::Decisions Admission::schedule(std::int64_t now_ns, std::vector<Window>& windows) {
  std::int64_t guard = static_cast<std::int64_t>(experiment_->prefill.guard_ns);
  std::erase_if(windows,
                [&](const Window& window) { return window.end_ns - guard <= std::max(window.start_ns, now_ns); });
  if (!std::is_sorted(windows.begin(), windows.end(), earlier)) std::sort(windows.begin(), windows.end(), earlier);
  Decisions decisions;
  reject_hopeless(now_ns, decisions.rejections);
  std::size_t head = 0;
  while (head < waiting_.size() && !windows.empty()) {
    std::optional<Batch> batch = place_longest(head, batch_end(head), now_ns, windows);
    if (!batch) {
      ++head;  // it waits for a later prediction; those behind it may fit now
      continue;
    }
    batch->id = next_batch_++;
    // Queued at once: the next batch of this call estimates its cache behind it.
    if (kv_placed_) kv_placed_(batch->chunks.back().worker, batch->chunks.back().end_ns(), batch->kv_bytes);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(head),
                   waiting_.begin() + static_cast<std::ptrdiff_t>(head + batch->requests.size()));
    decisions.batches.push_back(std::move(*batch));
  }
  return decisions;
}

}  // namespace wanlab::harness
