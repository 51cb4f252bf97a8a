// Per-rank traces in the PyTorch profiler's shape (rank_trace.hpp).
#include "wanlab/harness/report/rank_trace.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "record/record_internal.hpp"

namespace wanlab::harness {
namespace {

constexpr int kGpuPid = 0;  // the rank's one device
constexpr int kCpuPid = 1;  // its host side: the iterations
constexpr int kComputeStream = 7;
constexpr int kNcclStream = 13;

// `text` as a JSON string, quotes and escapes included.
std::string json_quote(const std::string& text) { return nlohmann::json(text).dump(); }

double us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

// What an event is called and where it runs.
struct Kernel {
  std::string name;
  int stream;
};

Kernel kernel_of(const Event& event) {
  switch (event.kind) {
    case OpKind::forward: return {fmt::format("wanlab::forward mb {}", event.microbatch), kComputeStream};
    case OpKind::backward: return {fmt::format("wanlab::backward mb {}", event.microbatch), kComputeStream};
    case OpKind::send:
      return {fmt::format("ncclDevKernel_SendRecv (send mb {} to rank {}, {} B)", event.microbatch, event.peer,
                          event.bytes),
              kNcclStream};
    case OpKind::recv:
      return {fmt::format("ncclDevKernel_SendRecv (recv mb {} from rank {})", event.microbatch, event.peer),
              kNcclStream};
    case OpKind::allreduce: return {fmt::format("ncclDevKernel_AllReduce_Sum_RING ({} B)", event.bytes), kNcclStream};
    case OpKind::allreduce_wait:
      return {fmt::format("cudaStreamWaitEvent (all-reduce {})", event.microbatch), kComputeStream};
  }
  return {"?", kComputeStream};
}

// A rank's events and prefill spans, from one pass over the record.
struct RankEvents {
  std::vector<const Event*> events;
  std::vector<const PrefillSpan*> spans;
};

std::vector<RankEvents> by_rank(const RunRecord& record) {
  std::vector<RankEvents> ranks(record.plan.workers.size());
  for (const Event& event : record.events) ranks.at(static_cast<std::size_t>(event.worker)).events.push_back(&event);
  if (record.prefill)
    for (const PrefillSpan& span : record.prefill->spans)
      ranks.at(static_cast<std::size_t>(span.worker)).spans.push_back(&span);
  return ranks;
}

class RankTrace {
 public:
  RankTrace(const RunRecord& record, int worker) : record_(record), worker_(worker) {}

  std::string json(const RankEvents& mine) {
    header(record_.plan.workers.at(static_cast<std::size_t>(worker_)).worker);
    for (const Event* event : mine.events) kernel(kernel_of(*event), event->start_ns, event->end_ns);
    for (const PrefillSpan* span : mine.spans)
      kernel({fmt::format("wanlab::prefill batch {} chunk {} ({} tokens)", span->batch, span->chunk, span->tokens),
              kComputeStream},
             span->start_ns, span->end_ns);
    for (int i = 0; i < detail::iteration_count(record_); ++i) step(i);
    return out_ + "\n]}\n";
  }

 private:
  void header(const Worker& w) {
    const Experiment& e = record_.plan.experiment;
    out_ = fmt::format(
        "{{\"schemaVersion\": 1,\n\"deviceProperties\": [{{\"id\": 0, \"name\": \"wanlab emulated GPU\", "
        "\"totalGlobalMem\": {:.0f}}}],\n"
        "\"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, \"pp_size\": {}, \"dp_size\": "
        "{}}},\n"
        "\"traceName\": {},\n\"traceEvents\": [\n",
        e.gpu_memory_gb * 1e9, worker_, record_.plan.workers.size(), e.parallel.pp, e.parallel.dp,
        json_quote(fmt::format("{} rank {}", e.name, worker_)));
    metadata("process_name", kGpuPid, 0,
             fmt::format("GPU 0: stage {} replica {} in {} ({})", w.stage, w.replica, w.dc_name, w.host));
    metadata("process_name", kCpuPid, 0, "wanlab worker");
    metadata("thread_name", kGpuPid, kComputeStream, fmt::format("stream {} (compute)", kComputeStream));
    metadata("thread_name", kGpuPid, kNcclStream, fmt::format("stream {} (nccl)", kNcclStream));
  }

  void next() { out_ += first_ ? "" : ",\n", first_ = false; }

  void metadata(std::string_view what, int pid, int tid, const std::string& name) {
    next();
    out_ += fmt::format(R"({{"name": "{}", "ph": "M", "ts": 0, "pid": {}, "tid": {}, "args": {{"name": {}}}}})", what,
                        pid, tid, json_quote(name));
  }

  void kernel(const Kernel& k, std::int64_t start_ns, std::int64_t end_ns) {
    next();
    ++correlation_;
    out_ +=
        fmt::format(R"({{"ph": "X", "cat": "kernel", "name": {}, "pid": {}, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, )"
                    R"("args": {{"device": 0, "stream": {}, "correlation": {}, "External id": {}}}}})",
                    json_quote(k.name), kGpuPid, k.stream, us(start_ns), us(end_ns - start_ns), k.stream, correlation_,
                    correlation_);
  }

  void step(int iteration) {
    const detail::IterationSpan span = detail::iteration_span(record_, iteration);
    next();
    out_ += fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": {}, "tid": 1, )"
                        R"("ts": {:.3f}, "dur": {:.3f}, "args": {{}}}})",
                        iteration, kCpuPid, us(span.start_ns), us(span.end_ns - span.start_ns));
  }

  const RunRecord& record_;
  int worker_;
  std::string out_;
  bool first_ = true;
  long long correlation_ = 0;
};

}  // namespace

std::string rank_trace_json(const RunRecord& record, int worker) {
  return RankTrace(record, worker).json(by_rank(record).at(static_cast<std::size_t>(worker)));
}

void write_rank_traces(const RunRecord& record, const RankSelection& shown, const base::OutputDir& dir) {
  const base::OutputDir ranks_dir = dir.subdir("ranks");
  const std::vector<RankEvents> ranks = by_rank(record);
  for (std::size_t w = 0; w < ranks.size(); ++w)
    if (shown.shows(static_cast<int>(w)))
      ranks_dir.write(fmt::format("rank-{}.json", w), RankTrace(record, static_cast<int>(w)).json(ranks[w]));
}

}  // namespace wanlab::harness
