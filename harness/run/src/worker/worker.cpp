// `wanlab worker`: one emulated GPU group. Everything runs on one
// single-threaded io_context: the control connection, the data channels'
// readers, the GPU's timers and the op sequence of each iteration.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/address_v4.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <csignal>
#include <deque>
#include <set>
#include <map>
#include <memory>

#include "protocol/control_socket.hpp"
#include "protocol/data_header.hpp"
#include "worker/data_channels.hpp"
#include "worker/gpu_lease.hpp"
#include "protocol/notifier.hpp"
#include "process/process_life.hpp"
#include "worker/worker_layout.hpp"
#include "wanlab/harness/run/gpu.hpp"
#include "wanlab/harness/run/run.hpp"
#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/channel.hpp"
#include "wanlab/harness/model/kv_routes.hpp"

namespace wanlab::harness {
namespace {

using namespace run_detail;
namespace ctl = control;
using transport::Channel;

constexpr auto kConnectPhase = std::chrono::seconds(60);
// How often a gated send looks whether its bytes have left the sockets.
constexpr auto kDrainPoll = std::chrono::milliseconds(1);
// A lead beyond this is a malformed assignment (a control delay of seconds).
constexpr std::uint64_t kMaxAnnounceLeadNs = 60'000'000'000;
// A ring step's message carries (all-reduce number + 1) x this + the step in
// its header's step field: an iteration of DiLoCo holds many all-reduces over
// the same ring. A ring of a real run has at most kMaxEmulatedWorkers members,
// 2(n - 1) steps; numbers stay below 2^20 ([diloco] limits), so it fits an int.
constexpr int kRingStepsPerAllreduce = 2 * static_cast<int>(kMaxEmulatedWorkers);

class WorkerProcess {
 public:
  WorkerProcess(std::string control_path, int id) : control_path_(std::move(control_path)), id_(id) {}

  int run() {
    const int code = life_.run(main_loop(), control_);
    // Sockets close while the io_context lives; coroutines holding them end with it.
    data_.clear();
    if (control_) control_->close();
    control_.reset();
    if (!made_lease_.empty()) ::unlink(made_lease_.c_str());  // the prefill worker's mapping outlives the name
    return code;
  }

 private:
  asio::awaitable<void> guarded(asio::awaitable<void> work) { return life_.guarded(std::move(work)); }

  // Peers close their channels once stopped, possibly before our own stop arrives.
  bool run_over() const { return stop_ || life_.ending() || (assign_ && iterations_reported_ >= assign_->iterations); }

  void finish() {
    data_.close();
    life_.end();
  }

  asio::awaitable<void> main_loop() {
    co_await connect_control();
    control_->post(ctl::Hello{id_, static_cast<int>(::getpid())});
    asio::co_spawn(io_, guarded(read_control()), asio::detached);
    const auto connect_deadline = Clock::now() + kConnectPhase;
    if (!co_await changed_.wait_for([&] { return assign_.has_value(); }, connect_deadline))
      throw WorkerFailure(fmt::format("no assignment from the coordinator within {} s", kConnectPhase.count()));
    data_.listen();
    control_->post(ctl::Listening{});
    if (!co_await changed_.wait_for([&] { return connect_; }, connect_deadline))
      throw WorkerFailure(fmt::format("no connect from the coordinator within {} s", kConnectPhase.count()));
    co_await data_.open(connect_deadline);
    control_->post(ctl::Ready{});
    for (;;) {
      co_await changed_.wait_for([&] { return stop_ || !starts_.empty(); });
      if (stop_) break;
      const int iteration = starts_.front();
      starts_.pop_front();
      co_await run_iteration(iteration);
      ++iterations_reported_;
    }
    finish();
  }

  asio::awaitable<void> connect_control() {
    try {
      // Across machines the run's secret authenticates the control channel and the data channels.
      const std::optional<RunSecret> secret = run_secret_for(control_path_);
      control_ = run_detail::connect_control(io_, control_path_, secret);
      if (secret) data_.authenticate_with(*secret);
    } catch (const std::runtime_error& error) {
      throw WorkerFailure(error.what());
    }
    co_return;
  }

  asio::awaitable<void> read_control() {
    for (;;) {
      auto message = co_await control_->read();
      if (!message) {
        if (!stop_) throw WorkerFailure("the coordinator closed the control connection");
        co_return;
      }
      handle(std::move(*message));
      changed_.notify();
    }
  }

  void handle(ctl::Message message) {
    if (auto* assign = std::get_if<ctl::Assign>(&message)) {
      if (assign_) throw WorkerFailure("a second assignment");
      if (assign->plan.worker.id != id_)
        throw WorkerFailure(fmt::format("assigned the plan of worker {}", assign->plan.worker.id));
      check_announced(*assign);
      assign_ = std::move(*assign);
      layout_.emplace(*assign_, id_);
      data_.assign(*assign_, *layout_);
      share_gpu();
    } else if (std::holds_alternative<ctl::Connect>(message)) {
      connect_ = true;
    } else if (auto* start = std::get_if<ctl::Start>(&message)) {
      starts_.push_back(start->iteration);
    } else if (auto* grant = std::get_if<ctl::GateGrant>(&message)) {
      grants_.insert({grant->iteration, grant->op_index});
    } else if (std::holds_alternative<ctl::Stop>(message)) {
      stop_ = true;
    } else if (auto* probe = std::get_if<ctl::ClockProbe>(&message)) {
      control_->post(ctl::ClockReply{probe->sequence, probe->coordinator_ns, monotonic_ns()});
    } else {
      throw WorkerFailure("unexpected " + ctl::type_name(message) + " message from the coordinator");
    }
  }

  static void check_announced(const ctl::Assign& assign) {
    const auto& ops = assign.announced_ops;
    for (const int index : ops) {
      if (index < 0 || static_cast<std::size_t>(index) >= assign.plan.ops.size() ||
          assign.plan.ops[static_cast<std::size_t>(index)].kind != OpKind::send)
        throw WorkerFailure(fmt::format("assigned op {} to announce, which is not a send of the plan", index));
    }
    if (std::adjacent_find(ops.begin(), ops.end(), std::greater_equal<>()) != ops.end())
      throw WorkerFailure("assigned ops to announce that are not in ascending order");
    if (assign.announce_lead_ns > kMaxAnnounceLeadNs)
      throw WorkerFailure(fmt::format("assigned an announce lead of {} ns", assign.announce_lead_ns));
  }

  bool is_announced(int op_index) const {
    return std::binary_search(assign_->announced_ops.begin(), assign_->announced_ops.end(), op_index);
  }

  // Tells the coordinator that announced send `op_index` will soon use its link (once
  // per iteration): from then until its bytes have left, KV caches leave that
  // link to it.
  void announce(int iteration, int op_index) {
    if (announced_now_.insert(op_index).second) control_->post(ctl::GateRequest{iteration, op_index});
  }

  // The announced sends that follow a compute, up to the next compute, are
  // announced the assignment's lead (two KV pieces, kv_routes.hpp) before
  // it is planned to end, so that the KV piece on their link has ended when
  // their bytes come.
  void announce_sends_after(int iteration, int op_index, std::int64_t compute_end_ns) {
    const auto& ops = assign_->plan.ops;
    std::vector<int> sends;
    for (std::size_t next = static_cast<std::size_t>(op_index) + 1; next < ops.size(); ++next) {
      if (ops[next].kind == OpKind::forward || ops[next].kind == OpKind::backward) break;
      if (ops[next].kind == OpKind::send && is_announced(static_cast<int>(next)))
        sends.push_back(static_cast<int>(next));
    }
    if (sends.empty()) return;
    asio::co_spawn(io_,
                   guarded(announce_at(iteration, std::move(sends),
                                       compute_end_ns - static_cast<std::int64_t>(assign_->announce_lead_ns))),
                   asio::detached);
  }

  asio::awaitable<void> announce_at(int iteration, std::vector<int> sends, std::int64_t at_ns) {
    co_await sleep_until_ns(at_ns);
    if (iteration != running_iteration_) co_return;  // that iteration is over: its sends announced themselves
    for (const int op_index : sends) announce(iteration, op_index);
  }

  // BubbleTea: the prefill worker on this GPU reserves it through the same
  // lease. Across machines this worker makes it, on its own machine, before
  // it says it listens (the coordinator assigns the prefill worker after).
  void share_gpu() {
    if (assign_->gpu_lease.empty()) return;
    try {
      if (assign_->make_gpu_lease) {
        lease_.emplace(run_detail::GpuLease::create(assign_->gpu_lease));
        made_lease_ = assign_->gpu_lease;
      } else {
        lease_.emplace(run_detail::GpuLease::open(assign_->gpu_lease));
      }
    } catch (const std::exception& error) {
      throw WorkerFailure(error.what());
    }
    gpu_.share(&*lease_);
  }

  // ---- one iteration -------------------------------------------------------

  asio::awaitable<void> run_iteration(int iteration) {
    events_.clear();
    arrivals_.clear();
    announced_now_.clear();
    running_iteration_ = iteration;
    reduced_.clear();
    const auto& ops = assign_->plan.ops;
    for (std::size_t index = 0; index < ops.size(); ++index) {
      const Op& op = ops[index];
      const int op_index = static_cast<int>(index);
      // The next compute's reaction is measured across receives and sends only.
      if (op.kind == OpKind::allreduce_wait || (op.kind == OpKind::allreduce && !op.overlapped)) held_from_ns_ = 0;
      switch (op.kind) {
        case OpKind::forward:
        case OpKind::backward: co_await compute(iteration, op_index, op); break;
        case OpKind::send:
          ++sends_in_flight_;
          asio::co_spawn(io_, guarded(send(iteration, op_index, op)), asio::detached);
          break;
        case OpKind::recv: co_await receive(iteration, op_index, op); break;
        case OpKind::allreduce:
          if (op.overlapped) {
            ++sends_in_flight_;
            asio::co_spawn(io_, guarded(allreduce(iteration, op_index, op)), asio::detached);
          } else {
            co_await allreduce(iteration, op_index, op);
          }
          break;
        case OpKind::allreduce_wait: co_await wait_for_allreduce(iteration, op_index, op); break;
      }
    }
    held_from_ns_ = 0;
    co_await changed_.wait_for([&] { return sends_in_flight_ == 0; });
    control_->post(ctl::Report{iteration, std::move(events_), std::move(arrivals_), std::move(sends_)});
    events_.clear();
    arrivals_.clear();
    sends_.clear();
    gpu_.forget_before(monotonic_ns() - 1'000'000'000);
  }

  Event event_of(int iteration, int op_index, const Op& op, std::int64_t start, std::int64_t end) const {
    Event e;
    e.worker = id_;
    e.iteration = iteration;
    e.op_index = op_index;
    e.kind = op.kind;
    e.microbatch = op.microbatch;
    e.peer = op.peer;
    e.bytes = op.bytes;
    e.start_ns = start;
    e.end_ns = end;
    e.cross_dc = op.cross_dc;
    return e;
  }

  asio::awaitable<void> compute(int iteration, int op_index, const Op& op) {
    const std::int64_t asked_ns = monotonic_ns();
    if (held_from_ns_ != 0)
      compute_hold_.learn(static_cast<std::uint64_t>(std::max<std::int64_t>(0, asked_ns - held_from_ns_)));
    held_from_ns_ = 0;
    announce_sends_after(iteration, op_index, asked_ns + static_cast<std::int64_t>(op.duration_ns));
    const std::string what = fmt::format("{}{}", op.kind == OpKind::forward ? "F" : "B", op.microbatch);
    const bool hold = next_needs_gpu_soon(op_index);
    const auto interval = co_await gpu_.compute(io_.get_executor(), op.duration_ns, what,
                                                hold ? compute_hold_.hold_ns(gpu_.wake_latency_bound_ns()) : 0);
    if (hold) held_from_ns_ = interval.end_ns;
    // Prefill shares this GPU: its next bubble starts now.
    if (lease_) control_->post(ctl::ComputeDone{iteration, op_index, interval.end_ns});
    Event event = event_of(iteration, op_index, op, interval.start_ns, interval.end_ns);
    event.gpu_wait_ns = interval.delayed_ns;
    event.wake_late_ns = interval.woke_late_ns;
    events_.push_back(std::move(event));
  }

  // Whether the op after `op_index` (sends and overlapped all-reduces run
  // beside) is a compute or a receive, whose message may be in already: then
  // the GPU is wanted again right away. Not before an all-reduce, a wait for
  // one, or at the iteration's end.
  bool next_needs_gpu_soon(int op_index) const {
    const auto& ops = assign_->plan.ops;
    for (std::size_t next = static_cast<std::size_t>(op_index) + 1; next < ops.size(); ++next) {
      if (ops[next].kind == OpKind::send || ops[next].overlapped) continue;
      return ops[next].kind != OpKind::allreduce && ops[next].kind != OpKind::allreduce_wait;
    }
    return false;
  }

  asio::awaitable<void> send(int iteration, int op_index, const Op& op) {
    data_.to(op.peer);
    const auto queued = monotonic_ns();
    const bool gated = op.cross_dc && op.link_slot >= 0;
    const bool announced = is_announced(op_index);
    if (announced) announce(iteration, op_index);
    if (gated) {
      control_->post(ctl::GateRequest{iteration, op_index});
      co_await changed_.wait_for([&] { return grants_.count({iteration, op_index}) != 0; });
      grants_.erase({iteration, op_index});
    }
    const auto start = monotonic_ns();
    const auto ticket =
        co_await data_.transmit(op.peer, DataHeader{iteration, id_, op.microbatch, -1, op_index}, op.bytes);
    const auto written = monotonic_ns();
    if (gated || announced) {
      // Temporal sharing hands the link on once the message's bytes have all
      // left the sockets (tcpi_notsent_bytes 0 on every stream), not once they
      // are written: then up to two chunks per stream still wait in the sockets,
      // which at a scaled testbed's rates is a fifth of a second of the link, and
      // the next sender's streams overflowed the queue beside them (measured at
      // scale 0.01: cwnd below the initial window after losses, 168 KB taking
      // 0.33-0.75 s where alone it takes 0.25 s).
      co_await data_.to(op.peer)->drain(kDrainPoll);
      control_->post(ctl::GateRelease{iteration, op_index});
    }
    if (op.cross_dc) sends_.push_back(send_record(op_index, queued, ticket));
    // The coordinator moves the end to the receiver's arrival time.
    events_.push_back(event_of(iteration, op_index, op, start, written));
    --sends_in_flight_;
    changed_.notify();
  }

  asio::awaitable<void> receive(int iteration, int op_index, const Op& op) {
    data_.to(op.peer);
    const auto start = monotonic_ns();
    const Arrived arrived =
        co_await data_.take(InboxKey{iteration, op.peer, op.microbatch, -1}, op.bytes, "microbatch message");
    arrivals_.push_back(ctl::Arrival{op.peer, arrived.sender_op, arrived.at_ns, arrived.first_byte_ns});
    // The next compute's reaction counts from this message's arrival, if after the last compute's end.
    if (held_from_ns_ != 0) held_from_ns_ = std::max(held_from_ns_, arrived.at_ns);
    events_.push_back(event_of(iteration, op_index, op, start, std::max(start, arrived.at_ns)));
  }

  // Ring all-reduce: 2(n-1) steps, each sending bytes / (2(n-1)) to the next
  // member and waiting for the previous member's piece of the same step. An
  // overlapped one runs beside the ops (counted as a send in flight).
  asio::awaitable<void> allreduce(int iteration, int op_index, const Op& op) {
    const auto start = monotonic_ns();
    const auto& group = layout_->ring_of(op);
    if (group.size() > 1 && op.bytes > 0) {
      if (std::find(group.begin(), group.end(), id_) == group.end())
        throw WorkerFailure("allreduce: not in my own allreduce group");
      const int next = layout_->ring_member(group, 1);
      const int previous = layout_->ring_member(group, -1);
      const int steps = 2 * (static_cast<int>(group.size()) - 1);
      const std::uint64_t piece = WorkerLayout::allreduce_piece(group.size(), op.bytes);
      const int first_step = (op.microbatch + 1) * kRingStepsPerAllreduce;
      for (int step = first_step; step < first_step + steps; ++step) {
        co_await data_.transmit(next, DataHeader{iteration, id_, -1, step, op_index}, piece);
        co_await data_.take(InboxKey{iteration, previous, -1, step}, piece, "allreduce piece");
      }
    }
    events_.push_back(event_of(iteration, op_index, op, start, monotonic_ns()));
    if (op.overlapped) {
      reduced_.insert(op.microbatch);
      --sends_in_flight_;
      changed_.notify();
    }
  }

  asio::awaitable<void> wait_for_allreduce(int iteration, int op_index, const Op& op) {
    const auto start = monotonic_ns();
    co_await changed_.wait_for([&] { return reduced_.contains(op.microbatch); });
    events_.push_back(event_of(iteration, op_index, op, start, monotonic_ns()));
  }

  std::string control_path_;
  int id_;
  std::shared_ptr<ControlSocket> control_;
  Notifier changed_;
  std::optional<ctl::Assign> assign_;
  std::optional<WorkerLayout> layout_;  // of *assign_
  bool connect_ = false;
  bool stop_ = false;
  std::deque<int> starts_;
  std::set<std::pair<int, int>> grants_;  // (iteration, op_index)
  std::set<int> announced_now_;           // announced sends announced in the running iteration
  int running_iteration_ = -1;
  DataChannels data_{
      io_, id_, changed_,
      [this](asio::awaitable<void> work) { asio::co_spawn(io_, guarded(std::move(work)), asio::detached); },
      [this] { return run_over(); }};
  std::optional<run_detail::GpuLease> lease_;  // before the GPU that points to it
  std::string made_lease_;                     // the lease file this worker made, removed when it ends
  EmulatedGpu gpu_;
  // The hold of computes followed by another compute or a receive, learned
  // here; the end of the last such compute (or a later arrival), 0 if none is pending.
  ComputeHold compute_hold_;
  std::int64_t held_from_ns_ = 0;
  std::vector<Event> events_;
  std::vector<ctl::Arrival> arrivals_;
  std::vector<ctl::SendRecord> sends_;  // this iteration's cross-DC sends
  int sends_in_flight_ = 0;             // sends and overlapped all-reduces
  std::set<int> reduced_;               // the running iteration's overlapped all-reduces that are done, by number
  int iterations_reported_ = 0;
  // Last: destroyed first, with the coroutines it still holds, while the
  // members they refer to are alive.
  asio::io_context io_{1};
  ProcessLife life_{io_, "wanlab worker " + std::to_string(id_)};
};

}  // namespace

int worker_main(const std::string& control_socket, int id) {
  WorkerProcess worker(control_socket, id);
  return worker.run();
}

}  // namespace wanlab::harness
