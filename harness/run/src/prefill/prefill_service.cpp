#include "prefill/prefill_service.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/steady_timer.hpp>
#include <cmath>
#include <limits>

#include "process/exit_status.hpp"
#include "protocol/control_auth.hpp"
#include "wanlab/harness/run/gpu.hpp"
#include "wanlab/harness/bubbletea/admission.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/model/kv_routes.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace wanlab::harness::run_detail {
namespace ctl = control;

namespace {

constexpr auto kLostWait = std::chrono::seconds(3);
constexpr const char* kMissedReason = "prefill not done by its TTFT SLO: the GPU was busy";

}  // namespace

PrefillService::PrefillService(Setup setup) : setup_(std::move(setup)), experiment_(setup_.plan->experiment) {
  if (setup_.remote) {
    const Nonce nonce = random_nonce();
    lease_tag_ = fmt::format("{:02x}", fmt::join(nonce.begin(), nonce.begin() + 8, ""));
  }
  record_.training_delay_ns.assign(setup_.plan->workers.size(), 0);
  chunk_ends_.resize(setup_.plan->workers.size());
  for (const WorkerPlan& w : setup_.plan->workers) {
    const int dc = decode_dc_of(experiment_, *setup_.scenario, w.worker.dc);
    if (dc < 0)
      throw RunError(
          fmt::format("[prefill] decode_dc \"{}\" is not a DC of the testbed", experiment_.prefill.decode_dc));
    auto sink = std::find_if(sinks_.begin(), sinks_.end(), [&](const Sink& s) { return s.dc == dc; });
    if (sink == sinks_.end())
      sink = sinks_.insert(sinks_.end(), Sink{dc, &setup_.testbed->host(decode_host_name(*setup_.scenario, dc)), 0});
    ++sink->senders;
    sink_of_.push_back(static_cast<int>(sink - sinks_.begin()));
  }
  processes_.resize(sink_of_.size() + sinks_.size());
  simulated_ =
      simulate_training(*setup_.plan, *setup_.scenario, link_model_for(*setup_.scenario, experiment_.scale), 1);
  // Requests over twice the run's simulated length: a slower real run still has arrivals to the end.
  const std::int64_t horizon = 2 * experiment_.iterations * first_iteration_ns(*simulated_) + 1'000'000'000;
  requests_ = load_requests(experiment_, horizon);
  kv_routes_.emplace(*setup_.plan, *setup_.scenario, link_model_for(*setup_.scenario, experiment_.scale));
  kv_routes_->leave_to_training(*simulated_);
  admission_.emplace(
      experiment_,
      [this](int worker, std::uint64_t bytes) {
        return kv_routes_->estimate_ns(worker, bytes, monotonic_ns() - origin_ns_);
      },
      [this](int worker, std::int64_t ready_ns, std::uint64_t bytes) { kv_routes_->queue(worker, ready_ns, bytes); });
}

// Across machines: in the testbed's directory on the worker's machine, which
// `wanlab join` made there and `leave` removes with whatever a killed worker
// left; named for this run too, since another run may use the testbed at the
// same time (the run's own directory is on the coordinator's machine).
std::string PrefillService::lease_path(int worker) const {
  if (setup_.remote)
    return fmt::format("{}/gpu-{}.{}.lease", emulator::run_dir(setup_.testbed->name), worker, lease_tag_);
  return fmt::format("{}/gpu-{}.lease", setup_.control_dir, worker);
}

void PrefillService::create_leases() {
  lease_ready_.assign(static_cast<std::size_t>(workers()), !setup_.remote);
  if (setup_.remote) return;
  for (int w = 0; w < workers(); ++w) leases_.push_back(GpuLease::create(lease_path(w)));
}

void PrefillService::lease_made(int worker) {
  lease_ready_.at(static_cast<std::size_t>(worker)) = true;
  assign_ready();
}

void PrefillService::launch(WorkerRuntime& runtime, const std::string& control_address) {
  const std::string& testbed = setup_.testbed->name;
  for (int index = 0; index < static_cast<int>(processes_.size()); ++index) {
    LaunchSpec spec;
    spec.worker = index;
    if (is_sink(index)) {
      const emulator::Host& host = *sink_at(index).host;
      const int sink = index - workers();
      spec.name = fmt::format("wanlab-{}-sink{}", testbed, sink);
      spec.hostname = "sink-" + host.name;
      spec.netns = host.netns;
      spec.host = host.name;
      spec.args = {"decode-sink", "--control", control_address, "--id", std::to_string(sink)};
    } else {
      const emulator::Host& host = setup_.testbed->host(setup_.plan->workers[index].worker.host);
      spec.name = fmt::format("wanlab-{}-p{}", testbed, index);
      spec.hostname = fmt::format("p{}-{}", index, host.name);
      spec.netns = host.netns;
      spec.host = host.name;
      spec.args = {"prefill-worker", "--control", control_address, "--id", std::to_string(index)};
    }
    processes_[index].pid = runtime.launch(spec);
    if (processes_[index].pid > 0) asio::co_spawn(*setup_.io, watch_exit(index), asio::detached);
  }
  if (setup_.log) {
    std::string hosts;
    for (const Sink& s : sinks_) hosts += fmt::format("{}{}", hosts.empty() ? "" : ", ", s.host->name);
    setup_.log(fmt::format("BubbleTea: {} prefill workers and {} on {}; {} requests over the run", workers(),
                           sinks_.size() == 1 ? "the decode sink" : fmt::format("{} decode sinks", sinks_.size()),
                           hosts, requests_.size()));
  }
}

std::string PrefillService::who(int index) const {
  if (is_sink(index)) return fmt::format("the decode sink on {}", sink_at(index).host->name);
  return fmt::format("prefill worker {} (on {})", index, setup_.plan->workers[index].worker.host);
}

bool PrefillService::usable(int worker) const {
  const Process& p = processes_[worker];
  return p.ready && !p.gone && !processes_[sink_process(worker)].gone;
}

std::string PrefillService::link_of(int worker) const {
  const Worker& w = setup_.plan->workers[worker].worker;
  const int dc = sinks_[sink_of_[worker]].dc;
  if (w.dc == dc) return "";
  return emulator::pair_name(w.dc_name, setup_.scenario->dcs[dc].name);
}

// ---- processes -------------------------------------------------------------

bool PrefillService::is_hello(const ctl::Message& message) {
  return std::holds_alternative<ctl::PrefillHello>(message) || std::holds_alternative<ctl::SinkHello>(message);
}

asio::awaitable<void> PrefillService::serve(std::shared_ptr<ControlSocket> socket, ctl::Message hello) {
  const auto* prefill = std::get_if<ctl::PrefillHello>(&hello);
  const int index = prefill ? prefill->worker : workers() + std::get<ctl::SinkHello>(hello).sink;
  if (index < 0 || index >= static_cast<int>(processes_.size()) || (prefill && is_sink(index)) ||
      processes_[index].hello)
    throw ctl::ControlError(fmt::format("{} from an unknown or repeated process", ctl::type_name(hello)));
  on_hello(index, socket);
  std::string lost;
  try {
    for (;;) {
      auto message = co_await socket->read();
      if (!message) break;
      handle(index, std::move(*message));
      setup_.changed->notify();
    }
    lost = "closed its control connection";
  } catch (const std::exception& error) {
    lost = fmt::format("control connection: {}", error.what());
  }
  if (!stopping_) co_await connection_lost(index, lost);
}

void PrefillService::on_hello(int index, std::shared_ptr<ControlSocket> socket) {
  Process& p = processes_[index];
  p.hello = true;
  p.control = std::move(socket);
  if (p.gone) {  // given up at the startup deadline
    p.control->post(ctl::Stop{});
    return;
  }
  // A sink's clock is its own; a prefill worker's is its training worker's,
  // which the coordinator probes.
  if (is_sink(index) && setup_.remote) {
    p.control->post(p.clock.first_probe(monotonic_ns()));
  } else if (is_sink(index)) {
    p.clock.same_clock();
  }
  assign_ready();
  setup_.changed->notify();
}

const ClockSync& PrefillService::clock_of(int index) const {
  return is_sink(index) ? processes_[index].clock : setup_.training_clock(index);
}

void PrefillService::clock_reply(int index, const ctl::ClockReply& reply) {
  Process& p = processes_[index];
  if (!is_sink(index)) throw ctl::ControlError(fmt::format("unexpected clock_reply {}", reply.sequence));
  if (const auto next = p.clock.reply(reply, monotonic_ns())) {
    p.control->post(*next);
  } else {
    assign_ready();
  }
}

// A process is assigned once its clock is known; a prefill worker also once
// its GPU's lease exists and its sink accepts channels.
void PrefillService::assign_ready() {
  for (int index = 0; index < static_cast<int>(processes_.size()); ++index) {
    Process& p = processes_[index];
    if (!p.hello || p.assigned || p.gone || !clock_of(index).known()) continue;
    if (is_sink(index)) {
      p.control->post(sink_assignment(index));
    } else if (lease_ready_.at(static_cast<std::size_t>(index)) && processes_[sink_process(index)].ready) {
      p.control->post(assignment(index));
    } else {
      continue;
    }
    p.assigned = true;
  }
}

bool PrefillService::settled() const {
  return std::all_of(processes_.begin(), processes_.end(), [](const Process& p) { return p.ready || p.gone; });
}

void PrefillService::give_up_unsettled(const std::string& why) {
  for (int index = 0; index < static_cast<int>(processes_.size()); ++index)
    if (!processes_[index].ready && !processes_[index].gone) gone(index, why);
}

void PrefillService::handle(int index, ctl::Message message) {
  to_coordinator_clock(index, message);
  if (auto* reply = std::get_if<ctl::ClockReply>(&message)) {
    clock_reply(index, *reply);
  } else if (auto* failed = std::get_if<ctl::Failed>(&message)) {
    gone(index, failed->reason);
  } else if (is_sink(index)) {
    handle_sink(index, message);
  } else {
    handle_worker(index, message);
  }
}

void PrefillService::to_coordinator_clock(int index, ctl::Message& message) const {
  const ClockSync& clock = clock_of(index);
  if (clock.offset_ns() == 0) return;
  const auto shift = [&clock](std::int64_t& t) { t = clock.to_coordinator(t); };
  if (auto* done = std::get_if<ctl::PrefillDone>(&message)) {
    shift(done->start_ns);
    shift(done->end_ns);
  } else if (auto* missed = std::get_if<ctl::PrefillMissed>(&message)) {
    shift(missed->at_ns);
    shift(missed->busy_until_ns);
  } else if (auto* sent = std::get_if<ctl::KvSent>(&message)) {
    shift(sent->start_ns);
    shift(sent->written_ns);
  } else if (auto* arrived = std::get_if<ctl::KvArrived>(&message)) {
    shift(arrived->at_ns);
  }
}

void PrefillService::handle_sink(int index, ctl::Message& message) {
  if (std::holds_alternative<ctl::Listening>(message)) {
    processes_[index].ready = true;
    assign_ready();
  } else if (auto* arrived = std::get_if<ctl::KvArrived>(&message)) {
    kv_arrived(*arrived);
  } else {
    throw ctl::ControlError("unexpected " + ctl::type_name(message) + " message from the decode sink");
  }
}

void PrefillService::handle_worker(int worker, ctl::Message& message) {
  if (std::holds_alternative<ctl::Ready>(message)) {
    processes_[worker].ready = true;
  } else if (auto* done = std::get_if<ctl::PrefillDone>(&message)) {
    chunk_done(worker, *done);
  } else if (auto* missed = std::get_if<ctl::PrefillMissed>(&message)) {
    ++missed_[iteration_];
    fail_batches([&](const BatchState& b) { return b.batch.id == missed->batch; }, kMissedReason);
    grant_kv();  // caches placed after it on its route no longer wait for it
  } else if (auto* request = std::get_if<ctl::KvGateRequest>(&message)) {
    kv_waiting_.push_back({worker, request->batch, request->piece});
    grant_kv();
  } else if (auto* release = std::get_if<ctl::KvGateRelease>(&message)) {
    const auto held = kv_holding_.find(kv_link(worker));
    if (held == kv_holding_.end() || held->second.worker != worker || held->second.batch != release->batch ||
        held->second.piece != release->piece)
      throw ctl::ControlError(
          fmt::format("released KV piece {} of batch {} without holding the link", release->piece, release->batch));
    kv_holding_.erase(held);
    grant_kv();
  } else if (auto* sent = std::get_if<ctl::KvSent>(&message)) {
    kv_sent(worker, *sent);
  } else {
    throw ctl::ControlError("unexpected " + ctl::type_name(message) + " message from a prefill worker");
  }
}

void PrefillService::chunk_done(int worker, const ctl::PrefillDone& done) {
  const auto it = batches_.find(done.batch);
  if (it == batches_.end() || done.chunk >= static_cast<int>(it->second.batch.chunks.size()))
    throw ctl::ControlError(fmt::format("done with chunk {} of unknown batch {}", done.chunk, done.batch));
  const Chunk& chunk = it->second.batch.chunks[done.chunk];
  // A chunk's slot runs its own layers and those carried over from the batch's earlier slots.
  if (done.end_layer > chunk.end_layer)
    throw ctl::ControlError(fmt::format("layers [{}, {}) ran in chunk {} of batch {}, which ends at layer {}",
                                        done.first_layer, done.end_layer, done.chunk, done.batch, chunk.end_layer));
  record_.spans.push_back(PrefillSpan{worker, done.batch, done.chunk, it->second.batch.tokens, done.first_layer,
                                      done.end_layer, done.start_ns - origin_ns_, done.end_ns - origin_ns_});
}

asio::awaitable<void> PrefillService::watch_exit(int index) {
  const auto status = co_await wait_exit(*setup_.io, processes_[index].pid);
  processes_[index].exit_status = status.value_or(-1);
  if (!stopping_) gone(index, status ? describe_status(*status) : "its process could not be watched");
  setup_.changed->notify();
}

// The connection ended without a word: the exit status, which says more, comes soon.
asio::awaitable<void> PrefillService::connection_lost(int index, std::string what) {
  if (processes_[index].pid > 0)
    co_await setup_.changed->wait_for([&] { return processes_[index].exit_status.has_value() || stopping_; },
                                      Clock::now() + kLostWait);
  if (!stopping_) gone(index, what);
}

// A process is lost: its outstanding requests fail and it gets no more work.
void PrefillService::gone(int index, const std::string& why) {
  Process& p = processes_[index];
  if (p.gone) return;
  p.gone = true;
  if (p.control) p.control->post(ctl::Stop{});
  const bool sink = is_sink(index);
  // A sink takes down the prefill of the workers that send to it.
  const auto affected = [&](int worker) { return worker == index || sink_process(worker) == index; };
  const std::string reason = fmt::format("{} {}", who(index), why);
  // A cache that arrived has served its requests, whether or not its worker said when it began.
  for (auto& [id, b] : batches_) {
    if (!b.arrived || !affected(b.batch.chunks.front().worker)) continue;
    const ctl::KvArrived arrived = *b.arrived;
    b.arrived.reset();
    kv_done(b, arrived);
  }
  const int failed = fail_batches([&](const BatchState& b) { return affected(b.batch.chunks.front().worker); }, reason);
  std::erase_if(windows_, [&](const Window& w) { return affected(w.worker); });
  std::erase_if(kv_waiting_, [&](const KvWaiter& k) { return k.worker == index; });
  std::erase_if(kv_holding_, [&](const auto& held) { return held.second.worker == index; });
  std::erase_if(kv_cache_on_, [&](const auto& on) {
    const auto b = batches_.find(on.second);
    return b == batches_.end() || affected(b->second.batch.chunks.front().worker);
  });
  record_.notes.push_back(
      fmt::format("{} failed: {}; {} requests failed{}", who(index), why, failed,
                  sink ? "; no more prefill on the GPUs that send to it" : "; later batches avoid its GPU"));
  if (setup_.log) setup_.log("BubbleTea: " + record_.notes.back());
  grant_kv();
  setup_.changed->notify();
}

// ---- scheduling ------------------------------------------------------------

void PrefillService::start_iteration(int iteration, std::int64_t start_ns, std::int64_t origin_ns,
                                     const RunRecord& record) {
  origin_ns_ = origin_ns;
  iteration_ = iteration;
  // The bubbles seen in both of the last two iterations: an activation that
  // came early once, or a send that waited for the link, does not make a
  // bubble look longer than it is. The first iteration is slower than the
  // rest (its connections' first data: 5.1-5.4 s against 3.9-4.3 s on
  // bubbletea-3dc-local) and predicts nothing: the second is predicted from
  // the simulation, the third from the second alone. (Iteration 0 beside the
  // simulation, as before, cut the bubbles into pieces that matched neither:
  // its errors' p90 was 1.7-4x the bubble at its start and 5-11x at its
  // length on bubbletea-3dc-busy and -local, the simulation's alone 0.2-0.4x
  // and 0.04-0.07x; from the third on, 0.03-0.09x.) Windows that end earlier
  // than predicted cost training at most one step (PrefillAssign::step_ns).
  const auto offsets = iteration <= 1 ? idle_offsets(*simulated_, 0)
                       : iteration == 2
                           ? idle_offsets(record, 1)
                           : idle_in_both(idle_offsets(record, iteration - 1), idle_offsets(record, iteration - 2));
  predicted_ = predict_windows(offsets, start_ns - origin_ns_, static_cast<std::int64_t>(experiment_.prefill.guard_ns));
  windows_ = predicted_;
  // Where the prediction has each compute end (the iteration it came from,
  // the later of two), so that the windows follow the schedule as it runs.
  predicted_ends_ = iteration <= 1 ? compute_end_offsets(*simulated_, 0) : compute_end_offsets(record, iteration - 1);
  for (auto& ends : predicted_ends_)
    for (auto& [op, end] : ends) end += start_ns - origin_ns_;
  drift_.reset(predicted_ends_.size());
  std::erase_if(windows_, [&](const Window& w) { return !usable(w.worker); });
  if (!started_) {
    started_ = true;
    asio::co_spawn(*setup_.io, feed_arrivals(), asio::detached);
  }
  schedule();
}

void PrefillService::compute_done(int worker, int iteration, int op_index, std::int64_t end_ns) {
  if (iteration != iteration_ || worker < 0 || static_cast<std::size_t>(worker) >= predicted_ends_.size()) return;
  const auto& ends = predicted_ends_[static_cast<std::size_t>(worker)];
  const auto predicted = ends.find(op_index);
  if (predicted == ends.end()) return;
  const DriftFollower::Shift shift = drift_.compute_ended(worker, predicted->second, end_ns - origin_ns_);
  if (shift.by_ns == 0) return;
  // A window moved earlier does not reach back over prefill already placed before it.
  shift_windows(windows_, worker, shift, [this](int w, std::int64_t start) {
    const auto& placed = chunk_ends_[static_cast<std::size_t>(w)];
    const auto after = placed.upper_bound(start);
    return after == placed.begin() ? std::numeric_limits<std::int64_t>::min() : *std::prev(after);
  });
  shift_windows(predicted_, worker, shift, [](int, std::int64_t) { return std::numeric_limits<std::int64_t>::min(); });
  schedule();
}

void PrefillService::finish_iteration(int iteration, const RunRecord& record) {
  if (iteration < 1) return;  // the first includes the connections' set-up
  const auto errors =
      prediction_errors(predicted_, idle_offsets(record, iteration), record.iteration_start_ns[iteration], iteration);
  record_.prediction.insert(record_.prediction.end(), errors.begin(), errors.end());
}

void PrefillService::add_training_delay(int worker, std::int64_t ns) { record_.training_delay_ns.at(worker) += ns; }

asio::awaitable<void> PrefillService::feed_arrivals() {
  while (next_arrival_ < requests_.size() && !stopping_) {
    co_await sleep_until_ns(origin_ns_ + requests_[next_arrival_].arrival_ns);
    if (stopping_) co_return;
    const std::int64_t now = monotonic_ns() - origin_ns_;
    while (next_arrival_ < requests_.size() && requests_[next_arrival_].arrival_ns <= now)
      arrive(requests_[next_arrival_++]);
    schedule();
  }
}

void PrefillService::arrive(const Request& request) {
  RequestOutcome& o = outcome(request.id);
  o.arrival_ns = request.arrival_ns;
  o.prompt_tokens = request.prompt_tokens;
  if (std::all_of(processes_.begin() + workers(), processes_.end(), [](const Process& p) { return p.gone; })) {
    o.state = RequestState::failed;
    o.reason = "no decode sink";
    return;
  }
  admission_->arrive(request);
}

void PrefillService::schedule() {
  if (!started_ || stopping_) return;
  auto decisions = admission_->schedule(monotonic_ns() - origin_ns_, windows_);
  for (const Rejection& r : decisions.rejections) {
    RequestOutcome& o = outcome(r.request);
    o.state = RequestState::rejected;
    o.reason = r.reason;
  }
  for (const Batch& batch : decisions.batches) place(batch);
}

// When a chunk's slot ends: the predicted end of the window it was placed
// in, which placement kept `guard` clear (the chunk's own end if it is in none).
std::int64_t PrefillService::slot_end(const Chunk& chunk) const {
  const std::int64_t end = chunk.end_ns();
  for (const Window& w : predicted_)
    if (w.worker == chunk.worker && w.start_ns <= chunk.start_ns && chunk.start_ns < w.end_ns)
      return std::max(end, w.end_ns);
  return end;
}

// Each chunk of the batch to its worker, at its time on CLOCK_MONOTONIC.
void PrefillService::place(const Batch& batch) {
  BatchState& state = batches_[batch.id];
  state.batch = batch;
  for (const Chunk& chunk : batch.chunks) chunk_ends_.at(static_cast<std::size_t>(chunk.worker)).insert(chunk.end_ns());
  for (int id : batch.requests) outcome(id).batch = batch.id;
  const Chunk& last_chunk = batch.chunks.back();
  // The last chunk may finish late while its requests can still meet the
  // SLO: by their deadline less the KV cache's estimated time.
  const std::int64_t kv_ns = batch.predicted_first_token_ns - last_chunk.end_ns();
  const std::int64_t give_up = batch_deadline(batch) - kv_ns;
  for (std::size_t c = 0; c < batch.chunks.size(); ++c) {
    const Chunk& chunk = batch.chunks[c];
    const bool last = c + 1 == batch.chunks.size();
    const ClockSync& clock = clock_of(chunk.worker);
    const auto on_its_clock = [&clock](std::int64_t ns) { return clock.to_process(ns); };
    processes_.at(chunk.worker)
        .control->post(ctl::PrefillTask{batch.id, static_cast<int>(c), on_its_clock(origin_ns_ + chunk.start_ns),
                                        on_its_clock(origin_ns_ + slot_end(chunk)), on_its_clock(origin_ns_ + give_up),
                                        chunk.duration_ns, chunk.first_layer, chunk.end_layer, batch.tokens,
                                        last ? batch.kv_bytes : 0});
  }
}

// When the batch's first request must have its first token (from the origin).
std::int64_t PrefillService::batch_deadline(const Batch& batch) {
  std::int64_t deadline = std::numeric_limits<std::int64_t>::max();
  for (int id : batch.requests) deadline = std::min(deadline, outcome(id).arrival_ns);
  return deadline + static_cast<std::int64_t>(experiment_.prefill.ttft_slo_ns);
}

int PrefillService::fail_batches(const std::function<bool(const BatchState&)>& which, const std::string& reason) {
  int failed = 0;
  for (auto& [id, b] : batches_) {
    if (b.over || !which(b)) continue;
    b.over = true;
    for (int request : b.batch.requests) {
      RequestOutcome& o = outcome(request);
      o.state = RequestState::failed;
      o.reason = reason;
      ++failed;
    }
  }
  return failed;
}

// ---- outcome ---------------------------------------------------------------

RequestOutcome& PrefillService::outcome(int request) {
  RequestOutcome& o = outcomes_[request];
  o.id = request;
  return o;
}

void PrefillService::stop() {
  stopping_ = true;
  for (Process& p : processes_)
    if (p.control) p.control->post(ctl::Stop{});
}

bool PrefillService::all_exited() const {
  return std::all_of(processes_.begin(), processes_.end(),
                     [](const Process& p) { return p.pid <= 0 || p.exit_status.has_value(); });
}

std::vector<pid_t> PrefillService::running() const {
  std::vector<pid_t> pids;
  for (const Process& p : processes_)
    if (p.pid > 0 && !p.exit_status) pids.push_back(p.pid);
  return pids;
}

void PrefillService::close() noexcept {
  stopping_ = true;
  for (Process& p : processes_) {
    if (p.control) p.control->close();
    p.control.reset();
  }
}

PrefillRecord PrefillService::finish(const RunRecord& record) {
  const std::int64_t end = record.iteration_end_ns.empty() ? 0 : record.iteration_end_ns.back();
  for (const Request& r : requests_) {
    if (r.arrival_ns > end) break;
    RequestOutcome& o = outcome(r.id);
    o.arrival_ns = r.arrival_ns;
    o.prompt_tokens = r.prompt_tokens;
  }
  record_.requests.clear();
  for (const auto& [id, o] : outcomes_)
    if (o.arrival_ns <= end) record_.requests.push_back(o);
  if (!missed_.empty()) {
    int total = 0;
    std::string per_iteration;
    for (const auto& [iteration, count] : missed_) {
      total += count;
      per_iteration += fmt::format("{}{} in iteration {}", per_iteration.empty() ? "" : ", ", count, iteration);
    }
    record_.notes.push_back(fmt::format("{} batches failed, {}: {}", total, kMissedReason, per_iteration));
  }
  std::sort(record_.spans.begin(), record_.spans.end(),
            [](const PrefillSpan& a, const PrefillSpan& b) { return a.start_ns < b.start_ns; });
  return record_;
}

}  // namespace wanlab::harness::run_detail
