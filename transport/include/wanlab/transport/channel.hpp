// A Channel: one logical, message-oriented, bidirectional link between two
// endpoints, carried by N parallel TCP connections.
//
// Messages are cut into chunks (ChannelOptions::chunk_size) and each chunk
// goes to whichever connection can take it now: every connection has a writer
// that, when its socket can accept a whole chunk and is draining (less than
// the not-sent low-water mark unsent), pulls the next chunk from the
// channel's send queue. A slow or
// stalled connection stops pulling, so it holds at most about one chunk plus
// its not-sent low-water mark, and the others carry the rest. The receiver
// writes each chunk straight to its offset in the message buffer and delivers
// whole messages, in send order.
//
// Threading: a channel lives on the executor given to connect()/listen(); call
// its functions from that executor (e.g. a single-threaded io_context, or a
// strand). Errors are thrown as TransportError, whose what() names the
// connection and what went wrong.
//
//   asio::co_spawn(io, [&]() -> asio::awaitable<void> {
//     auto channel = co_await Channel::connect(io.get_executor(), "10.2.0.2", 5301, options);
//     auto ticket = channel.send(Message::copy_of(bytes));   // queued at once
//     co_await ticket.wait();                                // in a socket buffer
//     while (auto reply = co_await channel.receive()) use(*reply);
//     co_await channel.shutdown();
//   }, asio::detached);
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "wanlab/transport/error.hpp"
#include "wanlab/transport/message.hpp"
#include "wanlab/transport/options.hpp"
#include "wanlab/transport/reassembly.hpp"
#include "wanlab/transport/stats.hpp"

namespace wanlab::transport {

namespace detail {
class ChannelCore;
class AcceptorCore;
struct Outgoing;
}  // namespace detail

/// Tracks one queued message.
class SendTicket {
 public:
  using clock = std::chrono::steady_clock;

  std::uint64_t message_id() const;
  std::uint64_t size() const;
  /// Every chunk has been written to a socket, or the channel failed.
  bool done() const;
  /// Waits until every chunk of the message is in a socket's send buffer
  /// (the bytes may be released then). Throws the channel's TransportError if
  /// the channel failed or was closed first.
  asio::awaitable<void> wait() const;
  /// When a connection took the message's first chunk; nullopt before.
  std::optional<clock::time_point> started_at() const;
  /// When the last chunk was written; nullopt before.
  std::optional<clock::time_point> written_at() const;
  /// With ChannelOptions::record_streams: the connections that carried the
  /// message so far, by index, with their cwnd and srtt at its first chunk;
  /// else empty.
  std::vector<StreamShare> streams() const;

 private:
  friend class detail::ChannelCore;
  SendTicket(std::shared_ptr<detail::ChannelCore> channel, std::shared_ptr<detail::Outgoing> message);
  std::shared_ptr<detail::ChannelCore> channel_;
  std::shared_ptr<detail::Outgoing> message_;
};

class Channel {
 public:
  /// Resolves `host`, opens options.connections TCP connections to `port`,
  /// applies the socket options and does the handshake on each. Throws
  /// TransportError: refused connection, handshake refused by the server (with
  /// its reason), timed out after options.connect_timeout, bad options.
  static asio::awaitable<Channel> connect(asio::any_io_executor executor, std::string host, std::uint16_t port,
                                          ChannelOptions options = {});

  Channel(Channel&&) noexcept;
  Channel& operator=(Channel&&) noexcept;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  /// Closes the channel at once (as close()).
  ~Channel();

  /// Queues a message the channel then owns, and returns at once. Many
  /// messages may be queued; they are delivered in the order queued. Throws
  /// TransportError if the channel is failed, closed or shut down, or if the
  /// message exceeds the peer's max_message_size.
  SendTicket send(Message message);
  /// Queues bytes the caller keeps valid and unchanged until the ticket is done.
  SendTicket send_borrowed(std::span<const std::byte> bytes);
  /// Queues a buffer sequence (gathered into one message) the caller keeps
  /// valid until the ticket is done.
  SendTicket send_borrowed(std::vector<asio::const_buffer> buffers);
  /// Waits until every message queued so far is written to the sockets.
  asio::awaitable<void> flush();
  /// Waits until the bytes written to the sockets so far have left them
  /// (tcpi_notsent_bytes 0 on every connection), or the channel is no longer
  /// open, looking every `poll`. After flush() or a done ticket: the message
  /// is on the wire, not only written; queued messages are not waited for.
  asio::awaitable<void> drain(std::chrono::milliseconds poll = std::chrono::milliseconds(1));

  /// The next whole message, in send order; nullopt once the peer has shut
  /// down its sending side and every message it sent has been received.
  /// Throws TransportError if the channel failed (messages that arrived whole
  /// before the failure are delivered first).
  asio::awaitable<std::optional<Message>> receive();
  /// receive(), with when the message's first chunk arrived.
  asio::awaitable<std::optional<Received>> receive_timed();

  /// Graceful end of this side's sending: waits for the queued messages to be
  /// written, then sends a goodbye on every connection (the peer's receive()
  /// then returns nullopt after the last message). Receiving goes on; once the
  /// peer has shut down too, the sockets are closed.
  asio::awaitable<void> shutdown();
  /// Closes every connection now. Pending sends and receives fail with
  /// Errc::closed; the peer sees its connections fail.
  void close();

  /// Paces each of the channel's connections at `bytes_per_s` from now on
  /// (SocketOptions::max_pacing_rate; 0 lifts it). Throws TransportError if
  /// the kernel refuses.
  void set_max_pacing_rate(std::uint64_t bytes_per_s);

  /// Open: neither failed nor closed (it may have been shut down).
  bool is_open() const;
  /// The error that failed the channel, if it failed.
  std::optional<TransportError> error() const;
  ChannelStats stats() const;

  std::uint64_t id() const;
  unsigned connection_count() const;
  std::uint32_t chunk_size() const;
  std::uint32_t peer_chunk_size() const;
  std::uint64_t peer_max_message_size() const;
  asio::ip::tcp::endpoint remote_endpoint() const;
  asio::any_io_executor get_executor() const;

 private:
  friend class detail::ChannelCore;
  friend class detail::AcceptorCore;
  explicit Channel(std::shared_ptr<detail::ChannelCore> core);
  std::shared_ptr<detail::ChannelCore> core_;
};

/// Accepts channels: listens on one TCP port, collects the N connections of
/// each connecting channel (grouped by channel id) and checks their hellos.
class Acceptor {
 public:
  /// Binds and listens now (so local_endpoint() is known, e.g. for port 0).
  /// Throws TransportError (address in use, bad options).
  static Acceptor listen(asio::any_io_executor executor, const asio::ip::tcp::endpoint& endpoint,
                         ChannelOptions options = {});

  Acceptor(Acceptor&&) noexcept;
  Acceptor& operator=(Acceptor&&) noexcept;
  ~Acceptor();

  /// The next channel whose connections have all arrived and been accepted.
  /// Throws TransportError for a client that was refused or failed its
  /// handshake (the acceptor keeps working: call accept() again), or
  /// Errc::closed once the acceptor is closed.
  asio::awaitable<Channel> accept();
  asio::ip::tcp::endpoint local_endpoint() const;
  void close();

 private:
  explicit Acceptor(std::shared_ptr<detail::AcceptorCore> core);
  std::shared_ptr<detail::AcceptorCore> core_;
};

}  // namespace wanlab::transport
