// results.json and trace.json.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <tuple>

#include "build_info.hpp"
#include "json.hpp"
#include "record_internal.hpp"
#include "wanlab/harness/record.hpp"


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

void write_file(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  fill(file);
  file.flush();
  if (!file) throw std::runtime_error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
}

void write_text_file(const std::string& path, const std::string& contents) {
  write_file(path, [&](std::ostream& file) { file << contents; });
}

}  // namespace detail

namespace {

using detail::Json;

std::string worker_track_name(const Worker& worker) {
  return fmt::format("stage {} replica {} ({})", worker.stage, worker.replica, worker.dc_name);
}

Json prefill_configuration_json(const PrefillConfig& prefill) {
  Json json = Json::object();
  json.set("enabled", prefill.enabled);
  if (!prefill.enabled) return json;
  if (!prefill.requests_path.empty()) json.set("requests", prefill.requests_path);
  if (prefill.arrivals) {
    Json& arrivals = json.set("arrivals", Json::object());
    arrivals.set("rate_per_s", prefill.arrivals->rate_per_s);
    arrivals.set("prompt_median", prefill.arrivals->prompt_median);
    arrivals.set("prompt_p90", prefill.arrivals->prompt_p90);
    arrivals.set("seed", prefill.arrivals->seed);
  }
  json.set("decode_dc", prefill.decode_dc);
  json.set("ttft_slo_s", static_cast<double>(prefill.ttft_slo_ns) / 1e9);
  json.set("max_batch_tokens", prefill.max_batch_tokens);
  json.set("guard_ms", static_cast<double>(prefill.guard_ns) / 1e6);
  Json& model = json.set("model", Json::object());
  model.set("layers", prefill.model.layers);
  model.set("hidden", prefill.model.hidden);
  model.set("kv_heads", prefill.model.kv_heads);
  model.set("head_dim", prefill.model.head_dim);
  model.set("bytes_per_value", prefill.model.bytes_per_value);
  if (prefill.model.parameters > 0) model.set("parameters", prefill.model.parameters);
  if (!prefill.time_tokens.empty()) {
    Json& time = json.set("time", Json::object());
    Json& tokens = time.set("tokens", Json::array());
    for (double t : prefill.time_tokens) tokens.push(t);
    Json& ms = time.set("ms", Json::array());
    for (double t : prefill.time_ms) ms.push(t);
  }
  return json;
}

// What BubbleTea did in the run: the summary (summarize_prefill) and what
// happened to every request.
Json prefill_json(const RunRecord& record) {
  const PrefillRecord& prefill = *record.prefill;
  const PrefillSummary summary = summarize_prefill(record);
  Json json = Json::object();
  json.set("mean_gpu_utilization", summary.mean_gpu_utilization);
  json.set("mean_training_utilization", summary.mean_training_utilization);
  Json& utilization = json.set("gpu_utilization", Json::array());
  for (double value : summary.gpu_utilization) utilization.push(value);
  json.set("prefill_tokens_per_s", summary.prefill_tokens_per_s);
  Json& requests = json.set("requests", Json::object());
  requests.set("arrived", summary.requests);
  requests.set("served", summary.served);
  requests.set("rejected", summary.rejected);
  requests.set("failed", summary.failed);
  requests.set("unfinished", summary.unfinished);
  Json& ttft = json.set("ttft_s", Json::object());
  ttft.set("p50", summary.ttft_p50_s);
  ttft.set("p90", summary.ttft_p90_s);
  ttft.set("p99", summary.ttft_p99_s);
  Json& kv = json.set("kv_bytes", Json::object());
  for (const auto& [link, bytes] : summary.kv_bytes) kv.set(link, bytes);
  Json& prediction = json.set("bubble_prediction_error_s", Json::object());
  prediction.set("start_p50", summary.prediction_start_error_p50_s);
  prediction.set("start_p90", summary.prediction_start_error_p90_s);
  prediction.set("length_p50", summary.prediction_length_error_p50_s);
  prediction.set("length_p90", summary.prediction_length_error_p90_s);
  json.set("training_delay_s", summary.training_delay_s);
  Json& notes = json.set("notes", Json::array());
  for (const std::string& note : prefill.notes) notes.push(note);
  // One row per request: [id, arrival_s, prompt_tokens, state, ttft_s or null, reason].
  Json& rows = json.set("request_outcomes", Json::array());
  for (const RequestOutcome& outcome : prefill.requests) {
    Json& row = rows.push(Json::array());
    row.push(outcome.id);
    row.push(static_cast<double>(outcome.arrival_ns) / 1e9);
    row.push(outcome.prompt_tokens);
    row.push(to_string(outcome.state));
    if (outcome.state == RequestState::served) {
      row.push(static_cast<double>(outcome.first_token_ns - outcome.arrival_ns) / 1e9);
    } else {
      row.push(Json());
    }
    row.push(outcome.reason);
  }
  return json;
}

Json configuration_json(const Experiment& experiment) {
  Json config = Json::object();
  config.set("name", experiment.name);
  config.set("path", experiment.path);
  config.set("testbed", experiment.testbed_path);
  config.set("schedule", to_string(experiment.schedule));
  if (experiment.placement == Placement::explicit_list) {
    Json& dcs = config.set("placement", Json::array());
    for (const std::string& dc : experiment.placement_dcs) dcs.push(dc);
  } else {
    config.set("placement", to_string(experiment.placement));
  }
  config.set("reorder_dcs", experiment.reorder_dcs);
  config.set("streams", experiment.streams);
  config.set("temporal_sharing", experiment.temporal_sharing);
  config.set("pacing", experiment.pacing);
  config.set("iterations", experiment.iterations);
  config.set("seed", experiment.seed);
  config.set("scale", experiment.scale);
  Json& model = config.set("model", Json::object());
  model.set("layers", experiment.model.layers);
  model.set("hidden", experiment.model.hidden);
  model.set("seq_len", experiment.model.seq_len);
  model.set("bytes_per_value", experiment.model.bytes_per_value);
  model.set("microbatch", experiment.model.microbatch);
  model.set("microbatches", experiment.model.microbatches);
  Json& parallel = config.set("parallel", Json::object());
  parallel.set("pp", experiment.parallel.pp);
  parallel.set("dp", experiment.parallel.dp);
  parallel.set("tp", experiment.parallel.tp);
  Json& compute = config.set("compute", Json::object());
  if (experiment.compute.peak_tflops) compute.set("peak_tflops", *experiment.compute.peak_tflops);
  if (experiment.compute.mfu) compute.set("mfu", *experiment.compute.mfu);
  compute.set("recompute", experiment.compute.recompute);
  if (experiment.compute.forward_ms) compute.set("forward_ms", *experiment.compute.forward_ms);
  if (experiment.compute.backward_ms) compute.set("backward_ms", *experiment.compute.backward_ms);
  Json& gpus = config.set("gpus", Json::object());
  for (const auto& [dc, count] : experiment.gpus) gpus.set(dc, count);
  config.set("gpu_memory_gb", experiment.gpu_memory_gb);
  config.set("prefill", prefill_configuration_json(experiment.prefill));
  return config;
}

Json plan_json(const Plan& plan) {
  Json json = Json::object();
  json.set("parameters", plan.parameters);
  json.set("activation_bytes", plan.activation_bytes);
  json.set("stage_param_bytes", plan.stage_param_bytes);
  json.set("allreduce_bytes_per_worker", plan.allreduce_bytes);
  json.set("forward_ms", static_cast<double>(plan.forward_ns) / 1e6);
  json.set("backward_ms", static_cast<double>(plan.backward_ns) / 1e6);
  json.set("gpus_used", plan.gpus_used);
  Json& stage_dc = json.set("stage_dc", Json::array());
  for (int dc : plan.stage_dc) stage_dc.push(plan.dc_names.at(static_cast<std::size_t>(dc)));
  Json& workers = json.set("workers", Json::array());
  for (const WorkerPlan& worker_plan : plan.workers) {
    const Worker& worker = worker_plan.worker;
    Json& entry = workers.push(Json::object());
    entry.set("id", worker.id);
    entry.set("stage", worker.stage);
    entry.set("replica", worker.replica);
    entry.set("dc", worker.dc_name);
    entry.set("host", worker.host);
    entry.set("ops", static_cast<std::uint64_t>(worker_plan.ops.size()));
  }
  return json;
}

Json iteration_json(const IterationSummary& summary) {
  Json json = Json::object();
  json.set("index", summary.index);
  json.set("time_s", summary.time_s);
  json.set("tokens_per_s", summary.tokens_per_s);
  json.set("mean_gpu_utilization", summary.mean_gpu_utilization);
  json.set("bubble_fraction", summary.bubble_fraction);
  json.set("network_blocked_s", summary.network_blocked_s);
  Json& utilization = json.set("gpu_utilization", Json::array());
  for (double value : summary.gpu_utilization) utilization.push(value);
  Json& wan = json.set("wan_bytes", Json::object());
  for (const auto& [link, bytes] : summary.wan_bytes) wan.set(link, bytes);
  return json;
}

Json percentiles_json(const TransferPercentiles& p) {
  Json json = Json::object();
  json.set("p50", p.p50_s);
  json.set("p90", p.p90_s);
  json.set("p99", p.p99_s);
  return json;
}

Json transfer_times_json(const TransferTimes& times) {
  Json json = Json::object();
  json.set("messages", static_cast<std::uint64_t>(times.transfer.messages));
  json.set("transfer_s", percentiles_json(times.transfer));
  json.set("wait_s", percentiles_json(times.wait));
  return json;
}

// Per WAN link: measured (a real run) and simulated transfer times.
Json transfers_json(const RunRecord& record) {
  Json json = Json::object();
  for (const LinkTransfers& link : summarize_transfers(record)) {
    Json& entry = json.set(link.link, Json::object());
    if (link.measured) entry.set("measured", transfer_times_json(*link.measured));
    if (link.simulated) entry.set("simulated", transfer_times_json(*link.simulated));
  }
  return json;
}

Json versions_json() {
  const detail::BuildInfo& build = detail::build_info();
  Json versions = Json::object();
  versions.set("wanlab", build.wanlab);
  if (!build.git_commit.empty()) versions.set("git_commit", build.git_commit);
  versions.set("tomlplusplus", build.tomlplusplus);
  versions.set("fmt", build.fmt);
  versions.set("compiler", build.compiler);
  return versions;
}

// --- trace.json ---

constexpr int kWorkersPid = 1;
constexpr int kLinksPid = 2;

double to_us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

Json metadata(std::string_view name, int pid, int tid, Json args) {
  Json event = Json::object();
  event.set("name", name);
  event.set("ph", "M");
  event.set("pid", pid);
  event.set("tid", tid);
  event.set("args", std::move(args));
  return event;
}

Json named(std::string_view name) {
  Json args = Json::object();
  args.set("name", name);
  return args;
}

Json sort_index(int index) {
  Json args = Json::object();
  args.set("sort_index", index);
  return args;
}

// A transfer's times (on the trace's clock, like ts) and streams, as args of its span.
void add_transfer_args(const TransferRecord& t, Json& args) {
  args.set("queued_us", to_us(t.queued_ns));
  args.set("first_sent_us", to_us(t.first_sent_ns));
  args.set("last_sent_us", to_us(t.last_sent_ns));
  args.set("first_received_us", to_us(t.first_received_ns));
  args.set("last_received_us", to_us(t.last_received_ns));
  if (t.streams.empty()) return;
  Json& streams = args.set("streams", Json::array());
  for (const StreamAtStart& stream : t.streams) {
    Json& entry = streams.push(Json::object());
    entry.set("stream", stream.stream);
    entry.set("bytes", stream.bytes);
    entry.set("cwnd", static_cast<std::uint64_t>(stream.cwnd));
    entry.set("srtt_us", static_cast<std::uint64_t>(stream.srtt_us));
  }
}

// An event's span; a send's carries its transfer's times and streams when known.
Json complete(std::string_view name, std::string_view category, int pid, int tid, const Event& event,
              const TransferRecord* transfer = nullptr) {
  Json json = Json::object();
  json.set("name", name);
  json.set("cat", category);
  json.set("ph", "X");
  json.set("pid", pid);
  json.set("tid", tid);
  json.set("ts", to_us(event.start_ns));
  json.set("dur", to_us(event.end_ns - event.start_ns));
  Json& args = json.set("args", Json::object());
  args.set("iteration", event.iteration);
  args.set("op", event.op_index);
  if (event.microbatch >= 0) args.set("microbatch", event.microbatch);
  if (event.peer >= 0) args.set("peer", event.peer);
  if (event.bytes > 0) args.set("bytes", event.bytes);
  args.set("cross_dc", event.cross_dc);
  if (transfer != nullptr) add_transfer_args(*transfer, args);
  return json;
}

Json span_json(std::string_view name, std::string_view category, int pid, int tid, std::int64_t start_ns,
               std::int64_t end_ns, Json args) {
  Json json = Json::object();
  json.set("name", name);
  json.set("cat", category);
  json.set("ph", "X");
  json.set("pid", pid);
  json.set("tid", tid);
  json.set("ts", to_us(start_ns));
  json.set("dur", to_us(end_ns - start_ns));
  json.set("args", std::move(args));
  return json;
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
    case OpKind::allreduce: return "all-reduce";
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
    write_(event.dump_compact());
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

std::string results_json(const RunRecord& record, const std::string& scenario_text) {
  const Experiment& experiment = record.plan.experiment;
  std::vector<IterationSummary> iterations = summarize(record);
  RunSummary run = summarize_run(iterations);
  Json root = Json::object();
  root.set("experiment", experiment.name);
  root.set("runtime", record.runtime);
  if (!record.runtime_detail.empty()) root.set("runtime_detail", record.runtime_detail);
  root.set("mean_iteration_s", run.mean_iteration_s);
  root.set("mean_gpu_utilization", run.mean_gpu_utilization);
  root.set("mean_bubble_fraction", run.mean_bubble_fraction);
  root.set("mean_tokens_per_s", run.mean_tokens_per_s);
  root.set("means_skip_first_iterations", run.skipped_iterations);
  if (record.prefill) root.set("prefill", prefill_json(record));
  Json& list = root.set("iterations", Json::array());
  for (const IterationSummary& summary : iterations) list.push(iteration_json(summary));
  root.set("transfers", transfers_json(record));
  root.set("configuration", configuration_json(experiment));
  root.set("plan", plan_json(record.plan));
  root.set("seed", experiment.seed);
  root.set("versions", versions_json());
  Json& scenario = root.set("scenario", Json::object());
  scenario.set("path", experiment.testbed_path);
  scenario.set("text", scenario_text);
  return root.dump();
}

namespace {

// BubbleTea: prefill chunks on their GPU's track, KV caches on tracks named
// for the WAN link they cross.
// KV caches get tracks of their own beside the links' ("east->europe KV"):
// they are written after the training events, so sharing lanes with those
// would open a lane per transfer.
constexpr int kFirstKvTid = 1 << 20;

void write_prefill(const RunRecord& record, TraceOut& trace) {
  LinkTracks links(kFirstKvTid);
  const Plan& plan = record.plan;
  for (const PrefillSpan& span : record.prefill->spans) {
    if (span.worker < 0 || static_cast<std::size_t>(span.worker) >= plan.workers.size()) continue;
    Json args = Json::object();
    args.set("batch", span.batch);
    args.set("chunk", span.chunk);
    args.set("tokens", span.tokens);
    args.set("layers", fmt::format("{}-{}", span.first_layer, span.end_layer - 1));
    trace.push(span_json(fmt::format("prefill b{}", span.batch), "prefill", kWorkersPid, span.worker + 1,
                         span.start_ns, span.end_ns, std::move(args)));
  }
  for (const KvTransfer& kv : record.prefill->kv) {
    if (kv.worker < 0 || static_cast<std::size_t>(kv.worker) >= plan.workers.size()) continue;
    const std::string& dc = plan.workers[static_cast<std::size_t>(kv.worker)].worker.dc_name;
    const std::string link = kv.link.empty() ? fmt::format("{0}->{0} KV (inside the DC)", dc) : kv.link + " KV";
    Json args = Json::object();
    args.set("batch", kv.batch);
    args.set("worker", kv.worker);
    args.set("bytes", kv.bytes);
    trace.push(span_json(fmt::format("KV b{}", kv.batch), "kv", kLinksPid,
                         links.lane(link, kv.start_ns, kv.end_ns, trace), kv.start_ns, kv.end_ns, std::move(args)));
  }
}

// The header, then one event per line: small enough to read, and diffs stay line-sized.
void write_trace(const RunRecord& record, const std::function<void(std::string_view)>& write) {
  const Plan& plan = record.plan;
  Json other = Json::object();
  other.set("experiment", plan.experiment.name);
  other.set("runtime", record.runtime);
  other.set("schedule", to_string(plan.experiment.schedule));
  other.set("wanlab", detail::build_info().wanlab);
  write("{\"displayTimeUnit\": \"ms\",\n\"otherData\": " + other.dump_compact() + ",\n\"traceEvents\": [\n");
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
  for (const Event& event : record.events) events.push_back(&event);
  std::stable_sort(events.begin(), events.end(),
                   [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  LinkTracks links;
  const TransferIndex transfers(record.transfers);
  for (const Event* event : events) {
    if (event->worker < 0 || static_cast<std::size_t>(event->worker) >= plan.workers.size()) continue;
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
    if (event->kind == OpKind::recv && !waited) continue;
    std::string_view category = detail::is_compute(event->kind) ? "compute" : "network";
    trace.push(complete(name, category, kWorkersPid, event->worker + 1, *event));
    if (event->kind == OpKind::allreduce) {
      std::string link = detail::wan_link_of(plan, *event);
      if (!link.empty()) {
        const Worker& self = plan.workers[static_cast<std::size_t>(event->worker)].worker;
        trace.push(complete(fmt::format("all-reduce stage {} r{}", self.stage, self.replica), "wan", kLinksPid,
                            links.lane(link, event->start_ns, event->end_ns, trace), *event));
      }
    }
  }
  if (record.prefill) write_prefill(record, trace);
  write("\n]}\n");
}

}  // namespace

std::string trace_json(const RunRecord& record) {
  std::string text;
  write_trace(record, [&](std::string_view piece) { text += piece; });
  return text;
}

void write_results_json(const RunRecord& record, const std::string& scenario_text, const std::string& path) {
  detail::write_text_file(path, results_json(record, scenario_text));
}

void write_trace_json(const RunRecord& record, const std::string& path) {
  detail::write_file(path, [&](std::ostream& file) {
    write_trace(record, [&](std::string_view piece) { file << piece; });
  });
}

}  // namespace wanlab::harness
