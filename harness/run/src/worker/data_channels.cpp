#include "worker/data_channels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <asio/ip/address_v4.hpp>
#include <cstdio>
#include <cstring>
#include <memory>

#include "protocol/control_socket.hpp"
#include "protocol/handshake_deadline.hpp"
#include "wanlab/harness/run/gpu.hpp"

namespace wanlab::harness::run_detail {
namespace ctl = control;
using transport::Channel;

void DataChannels::assign(const control::Assign& assign, const WorkerLayout& layout) {
  assign_ = &assign;
  layout_ = &layout;
  zeros_.assign(layout.largest_payload(false), std::byte{0});
}

transport::ChannelOptions DataChannels::channel_options(bool cross_dc) {
  const ctl::ChannelTuning& tuning = cross_dc ? assign_->cross_dc : assign_->intra_dc;
  transport::ChannelOptions options;
  options.connections = cross_dc ? static_cast<unsigned>(assign_->cross_dc_streams) : 1;
  options.chunk_size = tuning.chunk_size;
  options.socket.not_sent_lowat = tuning.not_sent_lowat;
  options.connect_timeout = std::chrono::seconds(20);
  options.handshake_timeout = std::chrono::seconds(20);
  // Peers send what the plan says and nothing larger; the identity message is 8 bytes.
  options.max_message_size = layout_->largest_payload(true) + kDataHeaderBytes;
  options.shared_memory_budget = memory_budget(options.max_message_size);
  // Channels idle for as long as the emulated GPU computes, and the peers are
  // this run's own workers: keepalive, not an idle timeout, finds one that vanished.
  options.idle_timeout = std::chrono::milliseconds(0);
  // The transfer records: which streams carried a message, their cwnd and srtt.
  options.record_streams = cross_dc;
  return options;
}

// One budget for every channel of this worker: room for a message of the
// largest planned size from every peer at once, plus the headroom the
// budget keeps for each channel's next message (MemoryBudget).
std::shared_ptr<transport::MemoryBudget> DataChannels::memory_budget(std::uint64_t largest_message) {
  if (!budget_) {
    const auto one = transport::MemoryBudget::charge_of(largest_message, transport::kMinChunkSize);
    const auto room = std::max(transport::ChannelOptions{}.memory_budget, (assign_->peers.size() + 1) * one);
    budget_ = std::make_shared<transport::MemoryBudget>(room);
  }
  return budget_;
}

// The acceptor's options set the chunk size of what this side sends.
void DataChannels::listen() {
  for (const bool cross : {false, true}) {
    const bool needed = std::any_of(assign_->peers.begin(), assign_->peers.end(),
                                    [&](const ctl::PeerAddress& p) { return p.worker < id_ && p.cross_dc == cross; });
    if (!needed) continue;
    const auto port = cross ? assign_->cross_dc.port : assign_->intra_dc.port;
    const asio::ip::tcp::endpoint endpoint(asio::ip::address_v4(assign_->ipv4), port);
    try {
      // The connecting side decides the number of streams.
      acceptors_.push_back(transport::Acceptor::listen(io_.get_executor(), endpoint, channel_options(cross)));
    } catch (const std::exception& error) {
      throw WorkerFailure(
          fmt::format("listening on {}:{}: {}", endpoint.address().to_string(), endpoint.port(), error.what()));
    }
    acceptor_is_cross_.push_back(cross);
  }
}

asio::awaitable<void> DataChannels::open(Clock::time_point deadline) {
  for (std::size_t i = 0; i < acceptors_.size(); ++i) {
    const bool cross = acceptor_is_cross_[i];
    const auto expected = std::count_if(assign_->peers.begin(), assign_->peers.end(), [&](const ctl::PeerAddress& p) {
      return p.worker < id_ && p.cross_dc == cross;
    });
    spawn_(accept_channels(acceptors_[i], static_cast<int>(expected), cross));
  }
  for (const auto& p : assign_->peers) {
    if (p.worker <= id_) continue;
    const std::string address = asio::ip::address_v4(p.ipv4).to_string();
    try {
      auto channel = co_await Channel::connect(io_.get_executor(), address, p.port, channel_options(p.cross_dc));
      const auto identity = encode_identity(id_);
      co_await channel.send_borrowed(std::span<const std::byte>(identity)).wait();
      if (secret_) co_await prove_to(channel, p.worker);
      add_channel(p.worker, std::move(channel));
    } catch (const std::exception& error) {
      throw WorkerFailure(
          fmt::format("opening a channel to worker {} at {}:{}: {}", p.worker, address, p.port, error.what()));
    }
  }
  if (!co_await changed_.wait_for([&] { return all_open(); }, deadline))
    throw WorkerFailure(
        fmt::format("only {} of {} peers' channels open after 60 s", channels_.size(), assign_->peers.size()));
}

bool DataChannels::expected_peer(std::optional<int> worker, bool cross) const {
  return worker && *worker < id_ && !channels_.count(*worker) &&
         std::any_of(assign_->peers.begin(), assign_->peers.end(),
                     [&](const ctl::PeerAddress& p) { return p.worker == *worker && p.cross_dc == cross; });
}

asio::awaitable<void> DataChannels::accept_channels(transport::Acceptor& acceptor, int count, bool cross) {
  if (secret_) co_return co_await accept_proven_channels(acceptor, cross);
  for (int accepted = 0; accepted < count; ++accepted) {
    auto channel = co_await acceptor.accept();
    auto first = co_await channel.receive();
    const auto worker = first ? decode_identity(first->bytes()) : std::nullopt;
    if (!expected_peer(worker, cross))
      throw WorkerFailure(fmt::format("a channel from {} did not name an expected worker",
                                      channel.remote_endpoint().address().to_string()));
    add_channel(*worker, std::move(channel));
  }
}

// Across machines anyone on the network may connect: each connection is
// admitted on its own (a silent one holds only itself), and the acceptor
// listens until the run ends, dropping whatever does not prove itself.
asio::awaitable<void> DataChannels::accept_proven_channels(transport::Acceptor& acceptor, bool cross) {
  for (;;) {
    std::optional<Channel> channel;
    try {
      channel.emplace(co_await acceptor.accept());
    } catch (const std::exception& error) {
      if (run_over_() || all_open()) co_return;  // closed at the end
      throw WorkerFailure(fmt::format("accepting data channels: {}", error.what()));
    }
    spawn_(admit(std::move(*channel), cross));
  }
}

// A peer that has not proved itself within kHandshakeTimeout is closed.
asio::awaitable<void> DataChannels::admit(Channel accepted, bool cross) {
  const auto channel = std::make_shared<Channel>(std::move(accepted));
  HandshakeDeadline deadline(io_.get_executor(), channel);
  std::string from = "a peer that left";
  std::optional<int> worker;
  try {
    from = channel->remote_endpoint().address().to_string();  // throws once the peer has gone
    auto first = co_await channel->receive();
    worker = first ? decode_identity(first->bytes()) : std::nullopt;
    if (!expected_peer(worker, cross)) throw std::runtime_error("it did not name an expected worker");
    const Nonce nonce = random_nonce();
    co_await channel->send_borrowed(std::as_bytes(std::span(nonce))).wait();
    auto proof = co_await channel->receive();
    if (!proof || !check_data_channel_proof(*secret_, nonce, *worker, id_, proof->bytes()))
      throw std::runtime_error("it did not prove it holds the run's secret");
    if (!expected_peer(worker, cross)) throw std::runtime_error("the worker it names is connected already");
  } catch (const std::exception& error) {
    deadline.decide();
    fmt::print(stderr, "wanlab worker {}: refused a data channel from {}: {}\n", id_, from, error.what());
    channel->close();
    co_return;
  }
  deadline.decide();
  add_channel(*worker, std::move(*channel));
}

asio::awaitable<void> DataChannels::prove_to(Channel& channel, int peer) {
  auto challenge = co_await channel.receive();
  if (!challenge || challenge->bytes().size() != sizeof(Nonce))
    throw std::runtime_error("worker " + std::to_string(peer) + " did not send its challenge");
  Nonce nonce{};
  std::memcpy(nonce.data(), challenge->bytes().data(), nonce.size());
  const AuthKey proof = data_channel_proof(*secret_, nonce, id_, peer);
  co_await channel.send_borrowed(std::as_bytes(std::span(proof))).wait();
}

void DataChannels::add_channel(int worker, Channel channel) {
  if (const auto rate = layout_->peer(worker).pacing_rate; rate > 0) {
    try {
      channel.set_max_pacing_rate(rate);
    } catch (const std::exception& error) {
      throw WorkerFailure(fmt::format("pacing the channel to worker {} at {} B/s: {}", worker, rate, error.what()));
    }
  }
  auto shared = std::make_shared<Channel>(std::move(channel));
  channels_[worker] = shared;
  spawn_(read_channel(worker, shared));
  changed_.notify();
}

asio::awaitable<void> DataChannels::read_channel(int worker, std::shared_ptr<Channel> channel) {
  for (;;) {
    std::optional<transport::Received> received;
    try {
      received = co_await channel->receive_timed();
    } catch (const std::exception& error) {
      if (run_over_()) co_return;
      throw WorkerFailure(fmt::format("channel from worker {}: {}", worker, error.what()));
    }
    if (!received) {
      if (!run_over_()) throw WorkerFailure(fmt::format("worker {} closed its channel", worker));
      co_return;
    }
    arrive(worker, std::move(*received), monotonic_ns());
  }
}

// A message from `worker`, checked against what its channel and the plan allow, into the inbox.
void DataChannels::arrive(int worker, transport::Received received, std::int64_t at_ns) {
  const transport::Message& message = received.message;
  DataHeader header;
  try {
    header = decode_header(message.bytes());
  } catch (const std::exception& error) {
    throw WorkerFailure(fmt::format("from worker {}: {}", worker, error.what()));
  }
  if (header.sender != worker)
    throw WorkerFailure(fmt::format("worker {}'s channel carried a message of worker {}", worker, header.sender));
  const InboxKey key{header.iteration, header.sender, header.microbatch, header.step};
  if (header.modelled_bytes > 0 && !layout_->same_host(worker))
    throw WorkerFailure(fmt::format("worker {} is on another host but sent a message standing for {} bytes", worker,
                                    header.modelled_bytes));
  const auto payload_bytes = message.size() - kDataHeaderBytes + header.modelled_bytes;
  const Arrived arrived{at_ns, std::min(at_ns, monotonic_ns(received.first_chunk_at)), payload_bytes, header.sender_op};
  if (!inbox_.emplace(key, arrived).second)
    throw WorkerFailure(fmt::format("worker {} sent microbatch {} step {} of iteration {} twice", worker,
                                    header.microbatch, header.step, header.iteration));
  changed_.notify();
}

std::shared_ptr<Channel> DataChannels::to(int worker) const {
  const auto it = channels_.find(worker);
  if (it == channels_.end()) throw WorkerFailure(fmt::format("no channel to worker {}", worker));
  return it->second;
}

std::span<const std::byte> DataChannels::payload(std::uint64_t bytes) const {
  if (bytes > zeros_.size()) throw WorkerFailure(fmt::format("a message of {} bytes, larger than planned", bytes));
  return {zeros_.data(), bytes};
}

asio::awaitable<transport::SendTicket> DataChannels::transmit(int to, DataHeader header, std::uint64_t bytes) {
  if (layout_->same_host(to)) {
    header.modelled_bytes = bytes;
    bytes = 0;
  }
  const auto head = encode_header(header);
  // Keep the channel alive while its ticket is pending.
  const auto keep = channels_.at(to);
  const auto body = payload(bytes);
  auto ticket =
      keep->send_borrowed(std::vector<asio::const_buffer>{asio::buffer(head), asio::buffer(body.data(), body.size())});
  try {
    co_await ticket.wait();
  } catch (const std::exception& error) {
    throw WorkerFailure(fmt::format("sending to worker {}: {}", to, error.what()));
  }
  co_return ticket;
}

asio::awaitable<Arrived> DataChannels::take(const InboxKey& key, std::uint64_t expected_bytes, const char* what) {
  co_await changed_.wait_for([&] { return inbox_.count(key) != 0; });
  const Arrived arrived = inbox_.at(key);
  inbox_.erase(key);
  if (arrived.payload_bytes != expected_bytes)
    throw WorkerFailure(fmt::format("{} from worker {} (iteration {}): {} bytes where the plan says {}", what,
                                    key.sender, key.iteration, arrived.payload_bytes, expected_bytes));
  co_return arrived;
}

void DataChannels::close() {
  for (auto& [peer, channel] : channels_) channel->close();
  for (auto& acceptor : acceptors_) acceptor.close();
}

void DataChannels::clear() {
  for (auto& [peer, channel] : channels_) channel->close();
  channels_.clear();
  acceptors_.clear();
}

}  // namespace wanlab::harness::run_detail
