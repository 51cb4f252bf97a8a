// `wanlab prefill-worker`: BubbleTea's prefill on one training worker's
// emulated GPU. It holds the GPU (the shared GpuLease) for each chunk of a
// batch at the time the coordinator placed it in a predicted bubble, but only
// if the GPU is free then; after a batch's last chunk it sends the batch's KV
// cache to the decode sink over a transport channel (in gated pieces with
// temporal sharing), the caches in the order admission placed their batches.
// One single-threaded io_context, like the workers'.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/address_v4.hpp>
#include <asio/steady_timer.hpp>
#include <map>
#include <set>

#include "protocol/control_auth.hpp"
#include "protocol/control_socket.hpp"
#include "protocol/data_header.hpp"
#include "worker/gpu_lease.hpp"
#include "prefill/kv_order.hpp"
#include "protocol/notifier.hpp"
#include "process/process_life.hpp"
#include "wanlab/harness/run/gpu.hpp"
#include "wanlab/harness/run/run.hpp"
#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/channel.hpp"

namespace wanlab::harness {
namespace {

using namespace run_detail;
namespace ctl = control;

struct PrefillFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class PrefillProcess {
 public:
  PrefillProcess(std::string control_path, int id) : control_path_(std::move(control_path)), id_(id) {}

  int run() {
    const int code = life_.run(main_loop(), control_);
    if (channel_) channel_->close();
    channel_.reset();
    if (control_) control_->close();
    control_.reset();
    return code;
  }

 private:
  asio::awaitable<void> guarded(asio::awaitable<void> work) { return life_.guarded(std::move(work)); }

  asio::awaitable<void> main_loop() {
    try {
      // Across machines the run's secret authenticates the control channel and the KV channel.
      secret_ = run_secret_for(control_path_);
      control_ = connect_control(io_, control_path_, secret_);
    } catch (const std::runtime_error& error) {
      throw PrefillFailure(error.what());
    }
    control_->post(ctl::PrefillHello{id_, static_cast<int>(::getpid())});
    asio::co_spawn(io_, guarded(read_control()), asio::detached);
    if (!co_await changed_.wait_for([&] { return assign_.has_value() || stop_; }, Clock::now() + kAssignWait))
      throw PrefillFailure(fmt::format("no assignment from the coordinator within {} s", kAssignWait.count()));
    if (stop_) {
      finish();
      co_return;
    }
    lease_.emplace(GpuLease::open(assign_->gpu_lease));
    co_await open_channel();
    control_->post(ctl::Ready{});
    asio::co_spawn(io_, guarded(send_kv_queue()), asio::detached);
    co_await changed_.wait_for([&] { return stop_; });
    finish();
  }

  void finish() {
    if (channel_) channel_->close();
    life_.end();
  }

  asio::awaitable<void> read_control() {
    for (;;) {
      auto message = co_await control_->read();
      if (!message) {
        if (!stop_) throw PrefillFailure("the coordinator closed the control connection");
        co_return;
      }
      handle(std::move(*message));
      changed_.notify();
    }
  }

  void handle(ctl::Message message) {
    if (auto* assign = std::get_if<ctl::PrefillAssign>(&message)) {
      if (assign_ || assign->worker != id_)
        throw PrefillFailure(fmt::format("an unexpected assignment (worker {})", assign->worker));
      assign_ = std::move(*assign);
    } else if (auto* task = std::get_if<ctl::PrefillTask>(&message)) {
      if (!lease_) throw PrefillFailure("a task before the assignment");
      if (task->chunk == 0) work_done_.emplace(task->batch, 0);  // a batch's first chunk starts at its first layer
      if (task->kv_bytes > 0) kv_order_.placed(task->batch);     // tasks come in placement order
      asio::co_spawn(io_, guarded(run_task(*task)), asio::detached);
    } else if (auto* grant = std::get_if<ctl::KvGateGrant>(&message)) {
      grants_.insert({grant->batch, grant->piece});
    } else if (std::holds_alternative<ctl::Stop>(message)) {
      stop_ = true;
    } else if (auto* probe = std::get_if<ctl::ClockProbe>(&message)) {
      control_->post(ctl::ClockReply{probe->sequence, probe->coordinator_ns, monotonic_ns()});
    } else {
      throw PrefillFailure("unexpected " + ctl::type_name(message) + " message from the coordinator");
    }
  }

  asio::awaitable<void> open_channel() {
    transport::ChannelOptions options;
    options.connections = static_cast<unsigned>(std::max(1, assign_->streams));
    options.chunk_size = assign_->chunk_size;
    options.socket.not_sent_lowat = assign_->not_sent_lowat;
    options.connect_timeout = std::chrono::seconds(20);
    options.max_message_size = 64;  // the sink sends nothing back
    options.memory_budget = transport::MemoryBudget::charge_of(options.max_message_size, transport::kMinChunkSize) * 4;
    options.idle_timeout = std::chrono::milliseconds(0);
    const std::string address = asio::ip::address_v4(assign_->sink_ipv4).to_string();
    try {
      channel_.emplace(co_await transport::Channel::connect(io_.get_executor(), address, assign_->sink_port, options));
      const auto identity = encode_identity(id_);
      co_await channel_->send_borrowed(std::span<const std::byte>(identity)).wait();
      if (secret_) co_await prove_to_sink();
    } catch (const std::exception& error) {
      throw PrefillFailure(fmt::format("opening the KV channel to the decode sink at {}:{}: {}", address,
                                       assign_->sink_port, error.what()));
    }
  }

  // Across machines the sink answers the identity with a nonce, and admits
  // the channel on its HMAC (control_auth.hpp's kv_channel_proof).
  asio::awaitable<void> prove_to_sink() {
    auto challenge = co_await channel_->receive();
    if (!challenge || challenge->bytes().size() != sizeof(Nonce))
      throw std::runtime_error("the decode sink did not send its challenge");
    Nonce nonce{};
    std::memcpy(nonce.data(), challenge->bytes().data(), nonce.size());
    const AuthKey proof = kv_channel_proof(*secret_, nonce, id_, assign_->sink);
    co_await channel_->send_borrowed(std::as_bytes(std::span(proof))).wait();
  }

  // A batch's chunks are time slots on this GPU for its work, in layer
  // order. At its time a slot runs the batch's work up to its own last layer
  // in steps of at most step_ns, each only while the GPU is free and each
  // ending by the slot's end_by (the bubble's predicted end: the guard that
  // placement kept free absorbs a bubble that began a little late). Training
  // that wants the GPU back (its reservation moves busy_until past the running
  // step) waits at most one step. Work a slot could not run (its bubble began
  // late or ended early) carries over to the batch's next slot; the last slot
  // finishes it in any free GPU time until give_up. Each run of steps without
  // a break is reported as one PrefillDone. (Measured on
  // bubbletea-3dc-local: with each chunk bound to its own layers and its
  // bubble, 70-90 chunks a run missed, most finding their bubble 1-3 ms late,
  // and each failed its whole batch.)
  asio::awaitable<void> run_task(ctl::PrefillTask task) {
    co_await sleep_until_ns(task.start_ns);
    const std::int64_t layer_ns =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(task.duration_ns) / (task.end_layer - task.first_layer));
    const std::int64_t target = task.end_layer * layer_ns;  // the batch's work done when this slot's is
    const bool last = task.kv_bytes > 0;
    const auto step_ns = static_cast<std::int64_t>(assign_->step_ns);
    // The batch's progress lives in work_done_ (from its first chunk's
    // arrival until its last slot ends), looked up after every suspension: a
    // slot that woke late may meet the next one running, or find it over.
    const auto done = [&] {
      const auto it = work_done_.find(task.batch);
      return it == work_done_.end() ? target : std::min(target, it->second);
    };
    const auto layer_at = [&](std::int64_t work) { return static_cast<int>(work / layer_ns); };
    std::int64_t run_from = 0, run_to = 0, run_start = -1, run_end = -1;
    const auto report_run = [&] {
      if (run_start >= 0 && run_to > run_from)
        control_->post(ctl::PrefillDone{task.batch, task.chunk, run_start, run_end, layer_at(run_from),
                                        std::min(task.end_layer, layer_at(run_to + layer_ns - 1))});
      run_start = -1;
    };
    while (done() < target) {
      if (stop_) co_return;
      const std::int64_t step = std::min(step_ns, target - done());
      // Its own slot, or for the last one the batch's SLO, bounds when a step may end.
      const auto in_time = [&](std::int64_t at) {
        return at + step <= task.end_by_ns || (last && at + step <= task.give_up_ns);
      };
      // Right after its own step a run leases from that step's end: a
      // training reservation made since then has moved busy_until past it.
      const std::int64_t at = run_start >= 0 ? run_end : monotonic_ns();
      if (!in_time(at)) break;
      if (const auto held = lease_->try_lease(at, static_cast<std::uint64_t>(step))) {
        const std::int64_t from = done();
        work_done_[task.batch] = from + step;  // the GPU is ours for it: counted before any suspension
        if (run_start < 0 || from != run_to) {
          report_run();
          run_start = held->start_ns;
          run_from = from;
        }
        run_to = from + step;
        run_end = held->end_ns;
        co_await sleep_until_ns(held->end_ns);
        continue;
      }
      report_run();
      const std::int64_t busy_until = lease_->busy_until_ns();
      if (!in_time(busy_until)) break;
      co_await sleep_until_ns(busy_until);
    }
    report_run();
    if (!last) co_return;  // what is left carries over to the batch's next slot
    const bool finished = done() >= target;
    work_done_.erase(task.batch);
    if (!finished) {
      kv_order_.dropped(task.batch);
      changed_.notify();
      control_->post(ctl::PrefillMissed{task.batch, task.chunk, monotonic_ns(), lease_->busy_until_ns()});
      co_return;
    }
    kv_order_.ready(task.batch, task.kv_bytes);
    changed_.notify();
  }

  // KV caches go one batch after the other, in the order admission placed
  // them (KvSendOrder), not the order their prefill ended.
  asio::awaitable<void> send_kv_queue() {
    for (;;) {
      co_await changed_.wait_for([&] { return stop_ || kv_order_.can_take(); });
      if (stop_) co_return;
      const auto [batch, bytes] = *kv_order_.take();
      co_await send_kv(batch, bytes);
    }
  }

  asio::awaitable<void> send_kv(int batch, std::uint64_t bytes) {
    const KvSendShape shape = kv_send_shape(*assign_, bytes);
    if (zeros_.size() < shape.piece_bytes) zeros_.assign(shape.piece_bytes, std::byte{0});  // no send is in flight
    // From its first byte's turn: admission's estimate counts the caches
    // queued ahead of it on the route, so its measured time must not again.
    std::int64_t start = -1;
    if (assign_->gated) control_->post(ctl::KvGateRequest{batch, 0});
    for (int p = 0; p < shape.pieces; ++p) {
      if (assign_->gated) {
        co_await changed_.wait_for([&] { return stop_ || grants_.count({batch, p}) != 0; });
        if (stop_) co_return;
        grants_.erase({batch, p});
        // Asked for while this piece goes: granted as soon as it is released,
        // without a round trip between the two.
        if (p + 1 < shape.pieces) control_->post(ctl::KvGateRequest{batch, p + 1});
      }
      if (start < 0) start = monotonic_ns();
      if (shape.timed_ns > 0) co_await sleep_until_ns(start + shape.timed_ns);
      const auto size = std::min(shape.piece_bytes, bytes - static_cast<std::uint64_t>(p) * shape.piece_bytes);
      try {
        co_await send_piece(KvHeader{id_, batch, p, shape.pieces, shape.modelled_bytes}, size).wait();
      } catch (const std::exception& error) {
        if (stop_) co_return;
        throw PrefillFailure(fmt::format("sending batch {}'s KV cache to the decode sink: {}", batch, error.what()));
      }
      if (assign_->gated) control_->post(ctl::KvGateRelease{batch, p});
    }
    control_->post(ctl::KvSent{batch, start, monotonic_ns()});
  }

  // One piece: its header (kept here until the ticket is done: pieces go one
  // at a time) and `size` zeros.
  transport::SendTicket send_piece(const KvHeader& header, std::uint64_t size) {
    kv_head_ = encode_kv_header(header);
    return channel_->send_borrowed(
        std::vector<asio::const_buffer>{asio::buffer(kv_head_), asio::buffer(zeros_.data(), size)});
  }

  std::string control_path_;
  int id_;
  std::shared_ptr<ControlSocket> control_;
  std::optional<RunSecret> secret_;  // across machines
  Notifier changed_;
  std::optional<ctl::PrefillAssign> assign_;
  std::optional<GpuLease> lease_;
  std::optional<transport::Channel> channel_;
  bool stop_ = false;
  std::map<int, std::int64_t> work_done_;  // per batch in progress: GPU time of its work done
  std::set<std::pair<int, int>> grants_;   // (batch, piece)
  KvSendOrder kv_order_;
  std::vector<std::byte> zeros_;
  std::array<std::byte, kKvHeaderBytes> kv_head_{};
  asio::io_context io_{1};  // destroyed first, with the coroutines it holds
  ProcessLife life_{io_, fmt::format("wanlab prefill-worker {}", id_)};
};

}  // namespace

int prefill_worker_main(const std::string& control_socket, int id) {
  PrefillProcess process(control_socket, id);
  return process.run();
}

}  // namespace wanlab::harness
