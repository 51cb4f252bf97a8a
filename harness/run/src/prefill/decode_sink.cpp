// `wanlab decode-sink`: BubbleTea's decode host, on the first host of a
// decode DC (one sink per decode DC; with decode_dc = "local", one per DC
// that holds training workers). It accepts one KV channel per prefill worker and tells the
// coordinator when each batch's KV cache has fully arrived (the request's
// first token can be decoded then: the end of its TTFT). A prefill worker
// that dies only ends its own channel; the coordinator learns why from the
// worker's exit.
#include <fmt/format.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/address_v4.hpp>
#include <map>
#include <memory>

#include "protocol/control_auth.hpp"
#include "protocol/control_socket.hpp"
#include "protocol/data_header.hpp"
#include "protocol/handshake_deadline.hpp"
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

struct SinkFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class DecodeSink {
 public:
  DecodeSink(std::string control_path, int sink) : control_path_(std::move(control_path)), sink_(sink) {}

  int run() {
    const int code = life_.run(main_loop(), control_);
    for (auto& channel : channels_) channel->close();
    channels_.clear();
    if (acceptor_) acceptor_->close();
    acceptor_.reset();
    if (control_) control_->close();
    control_.reset();
    return code;
  }

 private:
  asio::awaitable<void> guarded(asio::awaitable<void> work) { return life_.guarded(std::move(work)); }

  asio::awaitable<void> main_loop() {
    try {
      // Across machines the run's secret authenticates the control channel and the KV channels.
      secret_ = run_secret_for(control_path_);
      control_ = connect_control(io_, control_path_, secret_);
    } catch (const std::runtime_error& error) {
      throw SinkFailure(error.what());
    }
    control_->post(ctl::SinkHello{sink_, static_cast<int>(::getpid())});
    asio::co_spawn(io_, guarded(read_control()), asio::detached);
    if (!co_await changed_.wait_for([&] { return assign_.has_value() || stop_; }, Clock::now() + kAssignWait))
      throw SinkFailure(fmt::format("no assignment from the coordinator within {} s", kAssignWait.count()));
    if (!stop_) {
      listen();
      control_->post(ctl::Listening{});
      asio::co_spawn(io_, guarded(accept_channels()), asio::detached);
      co_await changed_.wait_for([&] { return stop_; });
    }
    life_.end();
  }

  asio::awaitable<void> read_control() {
    for (;;) {
      auto message = co_await control_->read();
      if (!message) {
        if (!stop_) throw SinkFailure("the coordinator closed the control connection");
        co_return;
      }
      if (auto* assign = std::get_if<ctl::SinkAssign>(&message.value())) {
        if (assign_) throw SinkFailure("a second assignment");
        assign_ = *assign;
      } else if (std::holds_alternative<ctl::Stop>(*message)) {
        stop_ = true;
      } else if (auto* probe = std::get_if<ctl::ClockProbe>(&message.value())) {
        control_->post(ctl::ClockReply{probe->sequence, probe->coordinator_ns, monotonic_ns()});
      } else {
        throw SinkFailure("unexpected " + ctl::type_name(*message) + " message from the coordinator");
      }
      changed_.notify();
    }
  }

  void listen() {
    transport::ChannelOptions options;
    options.chunk_size = assign_->chunk_size;
    options.max_message_size = assign_->max_message_bytes + kKvHeaderBytes;
    // Room for one whole KV message from every prefill worker at once.
    const auto one = transport::MemoryBudget::charge_of(options.max_message_size, transport::kMinChunkSize);
    budget_ = std::make_shared<transport::MemoryBudget>(
        std::max(transport::ChannelOptions{}.memory_budget, (static_cast<std::uint64_t>(assign_->senders) + 1) * one));
    options.shared_memory_budget = budget_;
    options.idle_timeout = std::chrono::milliseconds(0);
    options.handshake_timeout = std::chrono::seconds(20);
    const asio::ip::tcp::endpoint endpoint(asio::ip::address_v4(assign_->ipv4), assign_->port);
    try {
      acceptor_.emplace(transport::Acceptor::listen(io_.get_executor(), endpoint, options));
    } catch (const std::exception& error) {
      throw SinkFailure(
          fmt::format("listening on {}:{}: {}", endpoint.address().to_string(), endpoint.port(), error.what()));
    }
  }

  asio::awaitable<void> accept_channels() {
    while (!stop_) {
      try {
        auto channel = std::make_shared<transport::Channel>(co_await acceptor_->accept());
        channels_.push_back(channel);
        asio::co_spawn(io_, guarded(read_kv(channel)), asio::detached);
      } catch (const transport::TransportError& error) {
        if (stop_ || !acceptor_) co_return;
        fmt::print(stderr, "wanlab decode-sink: a KV channel was refused: {}\n", error.what());
      }
    }
  }

  // One prefill worker's channel: its identity, then KV pieces in order.
  asio::awaitable<void> read_kv(std::shared_ptr<transport::Channel> channel) {
    std::optional<int> worker;
    std::map<int, std::uint64_t> received;  // batch -> bytes so far
    for (;;) {
      std::optional<transport::Message> message;
      try {
        message = co_await channel->receive();
      } catch (const std::exception& error) {
        // Its prefill worker died or was stopped: the coordinator sees its
        // exit. Between caches nothing is lost (a stopped worker closes its
        // channel at once, often before the sink's own stop arrives).
        if (!stop_ && !received.empty())
          fmt::print(stderr, "wanlab decode-sink: KV channel of prefill worker {} ended inside a cache: {}\n",
                     worker.value_or(-1), error.what());
        co_return;
      }
      if (!message) co_return;
      const auto at = monotonic_ns();
      if (!worker) {
        worker = decode_identity(message->bytes());
        if (!worker && !secret_) throw SinkFailure("a KV channel did not name its prefill worker");
        if (secret_ && !co_await admitted(channel, worker)) co_return;
        continue;
      }
      const KvHeader header = decode_kv_header(message->bytes());
      if (header.worker != *worker)
        throw SinkFailure(fmt::format("prefill worker {}'s channel carried KV of worker {}", *worker, header.worker));
      if (header.modelled_bytes > 0 && channel->remote_endpoint().address() != asio::ip::address_v4(assign_->ipv4))
        throw SinkFailure(fmt::format("prefill worker {} is on another host but sent KV standing for {} bytes", *worker,
                                      header.modelled_bytes));
      auto& bytes = received[header.batch];
      bytes += message->size() - kKvHeaderBytes + header.modelled_bytes;
      if (header.piece + 1 == header.pieces) {
        control_->post(ctl::KvArrived{header.batch, *worker, bytes, at});
        received.erase(header.batch);
      }
    }
  }

  // Across machines anyone on the network may connect: a channel whose peer
  // does not prove it holds the run's secret for the worker it names
  // (kv_channel_proof) within kHandshakeTimeout is closed (a silent one
  // would hold its descriptor to the run's end), and the sink goes on.
  asio::awaitable<bool> admitted(std::shared_ptr<transport::Channel> channel, std::optional<int> worker) {
    HandshakeDeadline deadline(io_.get_executor(), channel);
    std::string from = "a peer that left";
    try {
      from = channel->remote_endpoint().address().to_string();
      if (!worker) throw std::runtime_error("it did not name a prefill worker");
      const Nonce nonce = random_nonce();
      co_await channel->send_borrowed(std::as_bytes(std::span(nonce))).wait();
      auto proof = co_await channel->receive();
      if (!proof || !check_kv_channel_proof(*secret_, nonce, *worker, sink_, proof->bytes()))
        throw std::runtime_error("it did not prove it holds the run's secret");
    } catch (const std::exception& error) {
      deadline.decide();
      fmt::print(stderr, "wanlab decode-sink: refused a KV channel from {}: {}\n", from, error.what());
      channel->close();
      co_return false;
    }
    deadline.decide();
    co_return true;
  }

  std::string control_path_;
  int sink_ = 0;
  std::optional<RunSecret> secret_;  // across machines
  std::shared_ptr<ControlSocket> control_;
  Notifier changed_;
  std::optional<ctl::SinkAssign> assign_;
  bool stop_ = false;
  std::shared_ptr<transport::MemoryBudget> budget_;  // before the acceptor and channels that charge it
  std::optional<transport::Acceptor> acceptor_;
  std::vector<std::shared_ptr<transport::Channel>> channels_;
  asio::io_context io_{1};  // destroyed first, with the coroutines it holds
  ProcessLife life_{io_, std::string("wanlab decode-sink")};
};

}  // namespace

int decode_sink_main(const std::string& control_socket, int sink_id) {
  DecodeSink sink(control_socket, sink_id);
  return sink.run();
}

}  // namespace wanlab::harness
