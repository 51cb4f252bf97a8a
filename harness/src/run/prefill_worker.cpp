// `wanlab prefill-worker`: BubbleTea's prefill on one training worker's
// emulated GPU. It holds the GPU (the shared GpuLease) for each chunk of a
// batch at the time the coordinator placed it in a predicted bubble, but only
// if the GPU is free then; after a batch's last chunk it sends the batch's KV
// cache to the decode sink over a transport channel (in gated pieces with
// temporal sharing). One single-threaded io_context, like the workers'.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/address_v4.hpp>
#include <asio/steady_timer.hpp>
#include <deque>
#include <set>

#include "control_socket.hpp"
#include "data_header.hpp"
#include "gpu_lease.hpp"
#include "notifier.hpp"
#include "process_life.hpp"
#include "wanlab/harness/gpu.hpp"
#include "wanlab/harness/run.hpp"
#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/channel.hpp"

namespace wanlab::harness {
namespace {

using namespace run_detail;
namespace ctl = control;

constexpr auto kAssignWait = std::chrono::seconds(60);

struct PrefillFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

asio::awaitable<void> sleep_until_ns(std::int64_t at_ns) {
  // steady_clock is CLOCK_MONOTONIC on Linux.
  asio::steady_timer timer(co_await asio::this_coro::executor, Clock::time_point(std::chrono::nanoseconds(at_ns)));
  std::error_code ignored;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

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
    control_ = connect_control(io_, control_path_);
    control_->post(ctl::PrefillHello{id_, static_cast<int>(::getpid())});
    asio::co_spawn(io_, guarded(read_control()), asio::detached);
    if (!co_await changed_.wait_for([&] { return assign_.has_value() || stop_; }, Clock::now() + kAssignWait))
      throw PrefillFailure("no assignment from the coordinator within 60 s");
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
      if (assign_ || assign->worker != id_) throw PrefillFailure(fmt::format("an unexpected assignment (worker {})", assign->worker));
      assign_ = std::move(*assign);
    } else if (auto* task = std::get_if<ctl::PrefillTask>(&message)) {
      if (!lease_) throw PrefillFailure("a task before the assignment");
      asio::co_spawn(io_, guarded(run_task(*task)), asio::detached);
    } else if (auto* grant = std::get_if<ctl::KvGateGrant>(&message)) {
      grants_.insert({grant->batch, grant->piece});
    } else if (std::holds_alternative<ctl::Stop>(message)) {
      stop_ = true;
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
    } catch (const std::exception& error) {
      throw PrefillFailure(fmt::format("opening the KV channel to the decode sink at {}:{}: {}", address, assign_->sink_port,
                                       error.what()));
    }
  }

  // At the task's time, layer by layer: a layer takes the GPU only if it is
  // free, so training that wants it back (its reservation moves busy_until
  // past the running layer) waits at most one layer. After such a preemption
  // the chunk goes on once training leaves the GPU, if what remains still
  // ends by the chunk's deadline (its latest start + duration: the predicted
  // bubble's end less the guard); else, or if it cannot start by its latest
  // start, it is missed and its batch fails. Each run of layers without a
  // break is reported as one PrefillDone.
  asio::awaitable<void> run_task(ctl::PrefillTask task) {
    co_await sleep_until_ns(task.start_ns);
    const int layers = task.end_layer - task.first_layer;
    const auto done_by = [&](int layer) {  // the chunk's time until `layer`
      return static_cast<std::int64_t>(task.duration_ns * static_cast<std::uint64_t>(layer - task.first_layer) /
                                       static_cast<std::uint64_t>(layers));
    };
    const std::int64_t deadline = task.latest_start_ns + static_cast<std::int64_t>(task.duration_ns);
    int layer = task.first_layer;
    int run_first = layer;
    std::int64_t run_start = -1, run_end = -1;
    const auto report_run = [&] {
      if (run_start >= 0) control_->post(ctl::PrefillDone{task.batch, task.chunk, run_start, run_end, run_first, layer});
      run_start = -1;
    };
    while (layer < task.end_layer) {
      if (stop_ || missed_.count(task.batch)) co_return;  // an earlier chunk of the batch missed its bubble
      const auto layer_ns = static_cast<std::uint64_t>(done_by(layer + 1) - done_by(layer));
      // Right after its own layer a run leases from that layer's end: a
      // training reservation made since then has moved busy_until past it.
      const std::int64_t at = run_start >= 0 ? run_end : monotonic_ns();
      if (const auto held = lease_->try_lease(at, layer_ns)) {
        if (run_start < 0) {
          run_start = held->start_ns;
          run_first = layer;
        }
        run_end = held->end_ns;
        co_await sleep_until_ns(held->end_ns);
        ++layer;
        continue;
      }
      report_run();
      const std::int64_t busy_until = lease_->busy_until_ns();
      const std::int64_t latest = layer == task.first_layer ? task.latest_start_ns
                                                            : deadline - (done_by(task.end_layer) - done_by(layer));
      if (busy_until > latest) {
        missed_.insert(task.batch);
        control_->post(ctl::PrefillMissed{task.batch, task.chunk, monotonic_ns(), busy_until});
        co_return;
      }
      co_await sleep_until_ns(busy_until);
    }
    report_run();
    if (task.kv_bytes > 0) {
      kv_queue_.push_back({task.batch, task.kv_bytes});
      changed_.notify();
    }
  }

  // KV caches go one batch after the other, in the order their prefill ended.
  asio::awaitable<void> send_kv_queue() {
    for (;;) {
      co_await changed_.wait_for([&] { return stop_ || !kv_queue_.empty(); });
      if (stop_) co_return;
      const auto [batch, bytes] = kv_queue_.front();
      kv_queue_.pop_front();
      co_await send_kv(batch, bytes);
    }
  }

  asio::awaitable<void> send_kv(int batch, std::uint64_t bytes) {
    const std::uint64_t piece = assign_->gated && assign_->piece_bytes > 0 ? assign_->piece_bytes : bytes;
    const int pieces = static_cast<int>((bytes + piece - 1) / piece);
    if (zeros_.size() < piece) zeros_.assign(piece, std::byte{0});  // no send is in flight here
    const std::int64_t start = monotonic_ns();
    for (int p = 0; p < pieces; ++p) {
      if (assign_->gated) {
        control_->post(ctl::KvGateRequest{batch, p});
        co_await changed_.wait_for([&] { return stop_ || grants_.count({batch, p}) != 0; });
        if (stop_) co_return;
        grants_.erase({batch, p});
      }
      const auto size = std::min<std::uint64_t>(piece, bytes - static_cast<std::uint64_t>(p) * piece);
      try {
        co_await send_piece(KvHeader{id_, batch, p, pieces}, size).wait();
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
    return channel_->send_borrowed(std::vector<asio::const_buffer>{asio::buffer(kv_head_), asio::buffer(zeros_.data(), size)});
  }

  std::string control_path_;
  int id_;
  std::shared_ptr<ControlSocket> control_;
  Notifier changed_;
  std::optional<ctl::PrefillAssign> assign_;
  std::optional<GpuLease> lease_;
  std::optional<transport::Channel> channel_;
  bool stop_ = false;
  std::set<int> missed_;                     // batches that lost a chunk
  std::set<std::pair<int, int>> grants_;     // (batch, piece)
  std::deque<std::pair<int, std::uint64_t>> kv_queue_;  // (batch, bytes)
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
