// The data side of `wanlab worker`: a transport channel to every peer of its
// plan (lower ids connect to higher ids; an accepted channel's first message
// names its worker), the messages that arrive on them kept until an op takes
// them, and sending a message's bytes, borrowed from one buffer of zeros.
// Single-threaded, on the worker's io_context.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "protocol/control_auth.hpp"
#include "protocol/data_header.hpp"
#include "protocol/notifier.hpp"
#include "wanlab/harness/run/control.hpp"
#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/channel.hpp"
#include "worker/worker_layout.hpp"

namespace wanlab::harness::run_detail {

// A message in the inbox: step -1 for a microbatch's, else an all-reduce step's.
struct InboxKey {
  int iteration, sender, microbatch, step;
  auto operator<=>(const InboxKey&) const = default;
};

struct Arrived {
  std::int64_t at_ns = 0;
  std::int64_t first_byte_ns = 0;
  std::uint64_t payload_bytes = 0;
  int sender_op = 0;
};

class DataChannels {
 public:
  // `spawn` runs a coroutine beside the worker's ops (failures end the
  // worker); `run_over` says whether a closed channel is the run's end.
  // `changed` is notified whenever a channel opens or a message arrives.
  using Spawn = std::function<void(asio::awaitable<void>)>;
  DataChannels(asio::io_context& io, int id, Notifier& changed, Spawn spawn, std::function<bool()> run_over)
      : io_(io), id_(id), changed_(changed), spawn_(std::move(spawn)), run_over_(std::move(run_over)) {}

  // Once assigned: both outlive this object's use of them.
  void assign(const control::Assign& assign, const WorkerLayout& layout);
  // Across machines: every channel proves it comes from a worker of the run
  // (control_auth.hpp's data_channel_proof); a connection that does not is
  // dropped, and the acceptor goes on waiting for the real peer.
  void authenticate_with(const RunSecret& secret) { secret_ = secret; }
  // One acceptor per kind of channel (intra-DC, cross-DC) a lower peer uses.
  void listen();
  // Connects to the higher peers and accepts the lower ones; throws
  // WorkerFailure if they are not all open by `deadline`.
  asio::awaitable<void> open(Clock::time_point deadline);
  bool all_open() const { return channels_.size() == assign_->peers.size(); }

  // The channel to `worker` (WorkerFailure if the plan has none), kept alive
  // by whoever holds it.
  std::shared_ptr<transport::Channel> to(int worker) const;
  // Sends `bytes` of payload after `header` (to a worker on this host the
  // header only, standing for them); returns the ticket once every byte is
  // written to the sockets.
  asio::awaitable<transport::SendTicket> transmit(int to, DataHeader header, std::uint64_t bytes);
  // Waits for the message `key` and takes it out of the inbox; WorkerFailure
  // if its size is not what the plan says (`what` names it).
  asio::awaitable<Arrived> take(const InboxKey& key, std::uint64_t expected_bytes, const char* what);

  void close();  // every channel and acceptor; the coroutines reading them end
  void clear();

 private:
  transport::ChannelOptions channel_options(bool cross_dc);
  std::shared_ptr<transport::MemoryBudget> memory_budget(std::uint64_t largest_message);
  asio::awaitable<void> accept_channels(transport::Acceptor& acceptor, int count, bool cross);
  asio::awaitable<void> accept_proven_channels(transport::Acceptor& acceptor, bool cross);
  asio::awaitable<void> admit(transport::Channel channel, bool cross);
  asio::awaitable<void> prove_to(transport::Channel& channel, int peer);
  bool expected_peer(std::optional<int> worker, bool cross) const;
  void add_channel(int worker, transport::Channel channel);
  asio::awaitable<void> read_channel(int worker, std::shared_ptr<transport::Channel> channel);
  void arrive(int worker, transport::Received received, std::int64_t at_ns);
  std::span<const std::byte> payload(std::uint64_t bytes) const;

  asio::io_context& io_;
  int id_;
  Notifier& changed_;
  Spawn spawn_;
  std::function<bool()> run_over_;
  const control::Assign* assign_ = nullptr;
  const WorkerLayout* layout_ = nullptr;
  std::optional<RunSecret> secret_;
  std::shared_ptr<transport::MemoryBudget> budget_;  // before the channels and acceptors that charge it
  std::vector<transport::Acceptor> acceptors_;       // intra-DC and/or cross-DC
  std::vector<bool> acceptor_is_cross_;
  std::map<int, std::shared_ptr<transport::Channel>> channels_;
  std::map<InboxKey, Arrived> inbox_;
  // Zeros that every data message's payload is borrowed from: sized once for
  // the largest message, since sends in flight keep pointing into it.
  std::vector<std::byte> zeros_;
};

}  // namespace wanlab::harness::run_detail
