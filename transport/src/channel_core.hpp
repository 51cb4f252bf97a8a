// The state behind a Channel handle: N connections, each with a writer and a
// reader coroutine, the send queue and the reassembler.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "async_event.hpp"
#include "send_state.hpp"
#include "wanlab/transport/channel.hpp"
#include "wanlab/transport/reassembly.hpp"
#include "wanlab/transport/wire.hpp"

namespace wanlab::transport::detail {

using Clock = std::chrono::steady_clock;

/// One queued message and the cursor that hands out its chunks.
struct Outgoing {
  std::uint64_t id = 0;
  std::uint64_t size = 0;
  std::vector<asio::const_buffer> buffers;
  Message owned;  // the bytes, when the channel owns them
  std::uint64_t chunks_total = 0;
  std::uint64_t chunks_handed_out = 0;
  std::uint64_t chunks_written = 0;
  std::uint64_t next_offset = 0;
  std::size_t cursor_buffer = 0;  // buffers[cursor_buffer] holds next_offset...
  std::size_t cursor_offset = 0;  // ...at this offset
  std::optional<Clock::time_point> started_at;
  std::optional<Clock::time_point> written_at;
  std::vector<StreamShare> streams;  // per connection, with options.record_streams
  bool failed = false;
  bool done() const { return written_at.has_value() || failed; }
};

struct Connection {
  Connection(asio::ip::tcp::socket s, unsigned i, Reassembler& reassembler)
      : socket(std::move(s)), retry_timer(socket.get_executor()), reader(reassembler, i), index(i) {}

  asio::ip::tcp::socket socket;
  asio::steady_timer retry_timer;  // a writer waiting for room also looks again on this
  FrameReader reader;
  unsigned index;
  ConnectionStats counters;
  TcpInfo final_tcp;  // snapshot taken when the socket closes
  bool reading_done = false;
  bool writing_done = false;
  bool broken = false;                             // poll() saw an error or hang-up: the next write reports it
  std::optional<Clock::time_point> stalled_since;  // had work but no room since
  wire::ChunkHeaderBytes header{};
  std::vector<asio::const_buffer> gather;  // header + payload pieces of one chunk
};

/// What a handshake (either side) hands over to start a channel.
struct ChannelSetup {
  asio::any_io_executor executor;
  std::vector<asio::ip::tcp::socket> sockets;  // ordered by connection index
  ChannelOptions options;
  std::shared_ptr<MemoryBudget> budget;  // the acceptor's, shared, or the channel's own
  std::uint64_t id = 0;
  std::uint32_t peer_chunk_size = 0;
  std::uint64_t peer_max_message_size = 0;
};

/// options.shared_memory_budget, or a new budget of options.memory_budget bytes.
std::shared_ptr<MemoryBudget> budget_for(const ChannelOptions& options);

class ChannelCore : public std::enable_shared_from_this<ChannelCore> {
 public:
  /// Takes the sockets and starts a reader and a writer per connection.
  static std::shared_ptr<ChannelCore> start(ChannelSetup setup);
  static Channel make_handle(std::shared_ptr<ChannelCore> core) { return Channel(std::move(core)); }
  explicit ChannelCore(ChannelSetup setup);
  ~ChannelCore();
  ChannelCore(const ChannelCore&) = delete;
  ChannelCore& operator=(const ChannelCore&) = delete;

  SendTicket enqueue(std::shared_ptr<Outgoing> message);
  asio::awaitable<void> flush();
  asio::awaitable<std::optional<Received>> receive();
  asio::awaitable<void> shutdown();
  void close();

  bool is_open() const { return state_ == State::open; }
  const std::optional<TransportError>& failure() const { return failure_; }
  /// The error to throw once the channel is not usable.
  TransportError unusable_error() const;
  AsyncEvent& sent_event() { return sent_event_; }
  ChannelStats stats() const;
  void set_max_pacing_rate(std::uint64_t bytes_per_s);

  std::uint64_t id() const { return id_; }
  unsigned connection_count() const { return static_cast<unsigned>(connections_.size()); }
  std::uint32_t chunk_size() const { return options_.chunk_size; }
  std::uint32_t peer_chunk_size() const { return peer_chunk_size_; }
  std::uint64_t peer_max_message_size() const { return peer_max_message_size_; }
  asio::ip::tcp::endpoint remote_endpoint() const { return remote_endpoint_; }
  asio::any_io_executor executor() const { return executor_; }

 private:
  enum class State { open, finished, failed, closed };
  struct ChunkJob {
    std::shared_ptr<Outgoing> message;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
  };

  asio::awaitable<void> write_loop(Connection& connection);
  asio::awaitable<void> read_loop(Connection& connection);
  /// Until the reassembler or the budget releases memory (or the channel ends).
  asio::awaitable<void> wait_for_memory();
  /// Fails the channel once nothing has moved for options_.idle_timeout.
  asio::awaitable<void> idle_watch();
  void progressed() { last_progress_ = Clock::now(); }
  std::string idle_reason() const;
  /// A chunk with its header, as it goes into a socket.
  std::uint64_t chunk_wire_bytes() const { return options_.chunk_size + wire::kChunkHeaderSize; }
  /// Whether the connection takes a chunk, by its socket's `state` (read_send_state).
  bool takes_chunks(Connection& connection, const SendState& state) const;
  /// One wait: until the socket reports POLLOUT or retry_interval passes;
  /// `known`: the socket's state if the caller has just read it.
  asio::awaitable<void> wait_for_room(Connection& connection, std::optional<SendState> known = std::nullopt);
  void stall_ended(Connection& connection);
  asio::awaitable<void> write_chunk(Connection& connection, const ChunkJob& job);
  asio::awaitable<void> write_goodbye(Connection& connection);
  ChunkJob pull_chunk(std::vector<asio::const_buffer>& pieces);
  /// Every connection's cwnd and srtt as a message's first chunk is taken.
  std::vector<StreamShare> stream_windows() const;
  void chunk_written(const ChunkJob& job);
  void reading_finished(Connection& connection);
  void maybe_finish();
  void fail(TransportError error);
  void stop(State state);
  std::string where(const Connection& connection) const;

  asio::any_io_executor executor_;
  ChannelOptions options_;
  std::uint64_t id_;
  std::uint32_t peer_chunk_size_;
  std::uint64_t peer_max_message_size_;
  asio::ip::tcp::endpoint remote_endpoint_;
  std::shared_ptr<MemoryBudget> budget_;  // before reassembler_, which charges it until destroyed
  Reassembler reassembler_;
  std::vector<std::unique_ptr<Connection>> connections_;

  State state_ = State::open;
  std::optional<TransportError> failure_;
  Clock::time_point last_progress_ = Clock::now();  // a byte moved or a message was taken
  asio::steady_timer idle_timer_;

  // Sending.
  std::deque<std::shared_ptr<Outgoing>> send_queue_;  // messages with chunks not yet handed out
  std::deque<std::shared_ptr<Outgoing>> unfinished_;  // messages not yet fully written
  std::uint64_t next_message_id_ = 0;
  std::uint64_t messages_sent_ = 0;
  bool shutting_down_ = false;
  bool send_done_ = false;
  AsyncEvent send_work_;   // queue got work, or shutdown/failure
  AsyncEvent sent_event_;  // a message was written, goodbyes done, or failure

  // Receiving.
  std::uint64_t messages_received_ = 0;
  bool receive_done_ = false;
  AsyncEvent receive_event_;  // a message is ready, receiving ended, or failure
  AsyncEvent memory_event_;   // reassembler memory released or next-in-order changed
};

}  // namespace wanlab::transport::detail
