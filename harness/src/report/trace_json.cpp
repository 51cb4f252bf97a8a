// trace.json (Chrome trace events).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>
#include <tuple>

#include "report/build_info.hpp"
#include "record/record_internal.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/report/ranks.hpp"
#include "wanlab/harness/report/trace.hpp"

namespace wanlab::harness {
namespace detail {

std::vector<int> display_order(const Plan& plan) {
  std::vector<int> dc_rank(plan.dc_names.size(), static_cast<int>(plan.dc_names.size()));
  int next_rank = 0;
  std::vector<const Worker*> workers;
  for (const WorkerPlan& worker_plan : plan.workers) workers.push_back(&worker_plan.worker);
  std::vector<const Worker*> by_stage = workers;
  std::stable_sort(by_stage.begin(), by_stage.end(), [](const Worker* a, const Worker* b) {
    return std::tie(a->stage, a->replica) < std::tie(b->stage, b->replica);
  });
  for (const Worker* worker : by_stage) {
    auto dc = static_cast<std::size_t>(worker->dc);
    if (dc < dc_rank.size() && dc_rank[dc] == static_cast<int>(dc_rank.size())) dc_rank[dc] = next_rank++;
  }
  auto rank = [&](const Worker* worker) {
    auto dc = static_cast<std::size_t>(worker->dc);
    return dc < dc_rank.size() ? dc_rank[dc] : worker->dc;
  };
  std::stable_sort(by_stage.begin(), by_stage.end(), [&](const Worker* a, const Worker* b) {
    return std::make_tuple(rank(a), a->stage, a->replica) < std::make_tuple(rank(b), b->stage, b->replica);
  });
  std::vector<int> order;
  for (const Worker* worker : by_stage) order.push_back(worker->id);
  return order;
}

}  // namespace detail

namespace {

using Json = nlohmann::ordered_json;

std::string worker_track_name(const Worker& worker) {
  return fmt::format("stage {} replica {} ({})", worker.stage, worker.replica, worker.dc_name);
}

// --- trace.json ---

constexpr int kWorkersPid = 1;
constexpr int kLinksPid = 2;

double to_us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

Json metadata(std::string_view name, int pid, int tid, Json args) {
  Json event = Json::object();
  event["name"] = name;
  event["ph"] = "M";
  event["pid"] = pid;
  event["tid"] = tid;
  event["args"] = std::move(args);
  return event;
}

Json named(std::string_view name) {
  Json args = Json::object();
  args["name"] = name;
  return args;
}

Json sort_index(int index) {
  Json args = Json::object();
  args["sort_index"] = index;
  return args;
}

// A transfer's times (on the trace's clock, like ts) and streams, as args of its span.
void add_transfer_args(const TransferRecord& t, Json& args) {
  args["queued_us"] = to_us(t.queued_ns);
  args["first_sent_us"] = to_us(t.first_sent_ns);
  args["last_sent_us"] = to_us(t.last_sent_ns);
  args["first_received_us"] = to_us(t.first_received_ns);
  args["last_received_us"] = to_us(t.last_received_ns);
  if (t.streams.empty()) return;
  Json& streams = args["streams"] = Json::array();
  for (const StreamAtStart& stream : t.streams)
    streams.push_back({{"stream", stream.stream},
                       {"bytes", stream.bytes},
                       {"cwnd", stream.cwnd},
                       {"srtt_us", stream.srtt_us},
                       {"retransmitted", stream.retransmitted}});
}

Json span_json(std::string_view name, std::string_view category, int pid, int tid, std::int64_t start_ns,
               std::int64_t end_ns, Json args) {
  return {{"name", name},
          {"cat", category},
          {"ph", "X"},
          {"pid", pid},
          {"tid", tid},
          {"ts", to_us(start_ns)},
          {"dur", to_us(end_ns - start_ns)},
          {"args", std::move(args)}};
}

// An event's span; a send's carries its transfer's times and streams when known.
Json complete(std::string_view name, std::string_view category, int pid, int tid, const Event& event,
              const TransferRecord* transfer = nullptr) {
  Json args = Json::object();
  args["iteration"] = event.iteration;
  args["op"] = event.op_index;
  if (event.microbatch >= 0) args["microbatch"] = event.microbatch;
  if (event.peer >= 0) args["peer"] = event.peer;
  if (event.bytes > 0) args["bytes"] = event.bytes;
  args["cross_dc"] = event.cross_dc;
  if (transfer != nullptr) add_transfer_args(*transfer, args);
  return span_json(name, category, pid, tid, event.start_ns, event.end_ns, std::move(args));
}

// Transfers by (worker, iteration, op) of their send.
class TransferIndex {
 public:
  explicit TransferIndex(const std::vector<TransferRecord>& transfers) {
    for (const TransferRecord& t : transfers) by_send_[{t.worker, t.iteration, t.op_index}] = &t;
  }
  const TransferRecord* find(const Event& send) const {
    const auto it = by_send_.find({send.worker, send.iteration, send.op_index});
    return it == by_send_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::tuple<int, int, int>, const TransferRecord*> by_send_;
};

std::string worker_event_name(const Plan& plan, const Event& event) {
  auto stage_of = [&](int id) {
    return id >= 0 && static_cast<std::size_t>(id) < plan.workers.size()
               ? plan.workers[static_cast<std::size_t>(id)].worker.stage
               : -1;
  };
  switch (event.kind) {
    case OpKind::forward: return fmt::format("F{}", event.microbatch);
    case OpKind::backward: return fmt::format("B{}", event.microbatch);
    case OpKind::recv: return fmt::format("wait for mb {} from stage {}", event.microbatch, stage_of(event.peer));
    case OpKind::allreduce: return allreduce_name(plan.experiment, event.microbatch);
    case OpKind::allreduce_wait: return "wait for " + allreduce_name(plan.experiment, event.microbatch);
    case OpKind::send: return fmt::format("send mb {} to stage {}", event.microbatch, stage_of(event.peer));
  }
  return "?";
}

// Trace events go out one at a time, as text: kept as a tree until the end
// they took about 2 KB each (4.6 GB for a run of 2 million steps).
class TraceOut {
 public:
  explicit TraceOut(const std::function<void(std::string_view)>& write) : write_(write) {}
  void push(const Json& event) {
    if (events_++ > 0) write_(",\n");
    write_(event.dump());
  }

 private:
  const std::function<void(std::string_view)>& write_;
  std::size_t events_ = 0;
};

// Each link gets as many lanes (tracks) as it has overlapping transfers.
class LinkTracks {
 public:
  explicit LinkTracks(int first_tid = 1) : next_tid_(first_tid) {}
  int lane(const std::string& link, std::int64_t start, std::int64_t end, TraceOut& trace) {
    std::vector<std::int64_t>& lane_ends = lanes_[link];
    for (std::size_t lane = 0; lane < lane_ends.size(); ++lane) {
      if (lane_ends[lane] <= start) {
        lane_ends[lane] = end;
        return tids_[{link, lane}];
      }
    }
    lane_ends.push_back(end);
    std::size_t lane = lane_ends.size() - 1;
    int tid = next_tid_++;
    tids_[{link, lane}] = tid;
    std::string name = lane == 0 ? link : fmt::format("{} ({})", link, lane + 1);
    trace.push(metadata("thread_name", kLinksPid, tid, named(name)));
    trace.push(metadata("thread_sort_index", kLinksPid, tid, sort_index(tid)));
    return tid;
  }

 private:
  std::map<std::string, std::vector<std::int64_t>> lanes_;
  std::map<std::pair<std::string, std::size_t>, int> tids_;
  int next_tid_;
};

}  // namespace

namespace {

// BubbleTea: prefill chunks on their GPU's track, KV caches on tracks named
// for the WAN link they cross.
// KV caches get tracks of their own beside the links' ("east->europe KV"):
// they are written after the training events, so sharing lanes with those
// would open a lane per transfer.
constexpr int kFirstKvTid = 1 << 20;

void write_prefill(const RunRecord& record, const RankSelection& ranks, TraceOut& trace) {
  LinkTracks links(kFirstKvTid);
  const Plan& plan = record.plan;
  for (const PrefillSpan& span : record.prefill->spans) {
    if (!ranks.shows(span.worker)) continue;
    Json args = Json::object();
    args["batch"] = span.batch;
    args["chunk"] = span.chunk;
    args["tokens"] = span.tokens;
    args["layers"] = fmt::format("{}-{}", span.first_layer, span.end_layer - 1);
    trace.push(span_json(fmt::format("prefill b{}", span.batch), "prefill", kWorkersPid, span.worker + 1, span.start_ns,
                         span.end_ns, std::move(args)));
  }
  for (const KvTransfer& kv : record.prefill->kv) {
    if (!ranks.shows(kv.worker)) continue;
    const std::string& dc = plan.workers[static_cast<std::size_t>(kv.worker)].worker.dc_name;
    const std::string link = kv.link.empty() ? fmt::format("{0}->{0} KV (inside the DC)", dc) : kv.link + " KV";
    Json args = Json::object();
    args["batch"] = kv.batch;
    args["worker"] = kv.worker;
    args["bytes"] = kv.bytes;
    if (kv.predicted_end_ns >= 0) args["predicted_end_us"] = to_us(kv.predicted_end_ns);
    if (kv.deadline_ns >= 0) args["deadline_us"] = to_us(kv.deadline_ns);
    trace.push(span_json(fmt::format("KV b{}", kv.batch), "kv", kLinksPid,
                         links.lane(link, kv.start_ns, kv.end_ns, trace), kv.start_ns, kv.end_ns, std::move(args)));
  }
}

// The header, then one event per line: small enough to read, and diffs stay line-sized.
// Only the workers `ranks` shows get tracks, and only their transfers go on
// the links' tracks.
void write_trace(const RunRecord& record, const RankSelection& ranks,
                 const std::function<void(std::string_view)>& write) {
  const Plan& plan = record.plan;
  Json other = Json::object();
  other["experiment"] = plan.experiment.name;
  other["runtime"] = record.runtime;
  other["schedule"] = to_string(plan.experiment.schedule);
  other["wanlab"] = detail::build_info().wanlab;
  other["ranks"] = ranks.description;
  write("{\"displayTimeUnit\": \"ms\",\n\"otherData\": " + other.dump() + ",\n\"traceEvents\": [\n");
  TraceOut trace(write);
  trace.push(metadata("process_name", kWorkersPid, 0, named("workers (GPUs)")));
  trace.push(metadata("process_sort_index", kWorkersPid, 0, sort_index(0)));
  trace.push(metadata("process_name", kLinksPid, 0, named("links between DCs")));
  trace.push(metadata("process_sort_index", kLinksPid, 0, sort_index(1)));
  trace.push(metadata("thread_name", kWorkersPid, 0, named("iterations")));
  trace.push(metadata("thread_sort_index", kWorkersPid, 0, sort_index(0)));
  std::vector<int> order = detail::display_order(plan);
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const Worker& worker = plan.workers[static_cast<std::size_t>(order[rank])].worker;
    if (!ranks.shows(worker.id)) continue;
    trace.push(metadata("thread_name", kWorkersPid, worker.id + 1, named(worker_track_name(worker))));
    trace.push(metadata("thread_sort_index", kWorkersPid, worker.id + 1, sort_index(static_cast<int>(rank) + 1)));
  }
  int iterations = detail::iteration_count(record);  // a pass over the events: not once per iteration
  for (int iteration = 0; iteration < iterations; ++iteration) {
    detail::IterationSpan span = detail::iteration_span(record, iteration);
    Event marker;
    marker.iteration = iteration;
    marker.start_ns = span.start_ns;
    marker.end_ns = span.end_ns;
    trace.push(complete(fmt::format("iteration {}", iteration), "iteration", kWorkersPid, 0, marker));
  }
  std::vector<const Event*> events;
  for (const Event& event : record.events)
    if (ranks.shows(event.worker)) events.push_back(&event);
  std::stable_sort(events.begin(), events.end(),
                   [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  LinkTracks links;
  const TransferIndex transfers(record.transfers);
  for (const Event* event : events) {
    std::string name = worker_event_name(plan, *event);
    if (event->kind == OpKind::send) {
      std::string link = detail::wan_link_of(plan, *event);
      if (link.empty()) continue;  // intra-DC messages show as waits on the receiver
      const Worker& sender = plan.workers[static_cast<std::size_t>(event->worker)].worker;
      std::string label = fmt::format("r{} s{} {}", sender.replica, sender.stage, name);
      trace.push(complete(label, "wan", kLinksPid, links.lane(link, event->start_ns, event->end_ns, trace), *event,
                          transfers.find(*event)));
      continue;
    }
    bool waited = event->end_ns > event->start_ns;
    if ((event->kind == OpKind::recv || event->kind == OpKind::allreduce_wait) && !waited) continue;
    std::string_view category = detail::is_compute(event->kind) ? "compute" : "network";
    // An overlapped all-reduce runs beside the worker's compute: only on its link.
    if (!detail::overlapped(plan, *event)) trace.push(complete(name, category, kWorkersPid, event->worker + 1, *event));
    if (event->kind == OpKind::allreduce) {
      std::string link = detail::wan_link_of(plan, *event);
      if (!link.empty()) {
        const Worker& self = plan.workers[static_cast<std::size_t>(event->worker)].worker;
        trace.push(complete(fmt::format("{} stage {} r{}", name, self.stage, self.replica), "wan", kLinksPid,
                            links.lane(link, event->start_ns, event->end_ns, trace), *event));
      }
    }
  }
  if (record.prefill) write_prefill(record, ranks, trace);
  write("\n]}\n");
}

}  // namespace

std::string trace_json(const RunRecord& record, const RankSelection& ranks) {
  std::string text;
  write_trace(record, ranks, [&](std::string_view piece) { text += piece; });
  return text;
}

std::string trace_json(const RunRecord& record) { return trace_json(record, all_ranks(record.plan)); }

void write_trace_json(const RunRecord& record, const RankSelection& ranks, const base::OutputDir& dir) {
  dir.write("trace.json",
            [&](std::ostream& file) { write_trace(record, ranks, [&](std::string_view piece) { file << piece; }); });
}

}  // namespace wanlab::harness
