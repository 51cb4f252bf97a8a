// The channel: set-up, receiving and ending (the sending side is channel_send.cpp),
// and the public Channel and SendTicket over it.
#include <fmt/format.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include "channel_core.hpp"
#include "send_state.hpp"
#include "socket_setup.hpp"
#include "wanlab/transport/crc32c.hpp"

namespace wanlab::transport::detail {
ChannelCore::ChannelCore(ChannelSetup setup)
    : executor_(setup.executor),
      options_(std::move(setup.options)),
      id_(setup.id),
      peer_chunk_size_(setup.peer_chunk_size),
      peer_max_message_size_(setup.peer_max_message_size),
      budget_(std::move(setup.budget)),
      reassembler_({setup.peer_chunk_size, options_.max_message_size, options_.receive_memory_limit, budget_.get()},
                   static_cast<unsigned>(setup.sockets.size())),
      idle_timer_(executor_),
      send_work_(executor_),
      sent_event_(executor_),
      receive_event_(executor_),
      memory_event_(executor_) {
  std::error_code ignored;
  if (!setup.sockets.empty()) remote_endpoint_ = setup.sockets.front().remote_endpoint(ignored);
  for (unsigned i = 0; i < setup.sockets.size(); ++i) {
    connections_.push_back(std::make_unique<Connection>(std::move(setup.sockets[i]), i, reassembler_));
    connections_.back()->counters.index = i;
  }
}

std::shared_ptr<MemoryBudget> budget_for(const ChannelOptions& options) {
  if (options.shared_memory_budget) return options.shared_memory_budget;
  return std::make_shared<MemoryBudget>(options.memory_budget);
}

ChannelCore::~ChannelCore() { budget_->forget(this); }

std::shared_ptr<ChannelCore> ChannelCore::start(ChannelSetup setup) {
  auto core = std::make_shared<ChannelCore>(std::move(setup));
  for (auto& connection : core->connections_) {
    connection->socket.non_blocking(true);  // writers write until the kernel says "would block"
    asio::co_spawn(core->executor_, core->read_loop(*connection), asio::detached);
    asio::co_spawn(core->executor_, core->write_loop(*connection), asio::detached);
  }
  if (core->options_.idle_timeout.count() > 0) asio::co_spawn(core->executor_, core->idle_watch(), asio::detached);
  return core;
}

std::string ChannelCore::where(const Connection& connection) const {
  return fmt::format("connection {} of {}", connection.index, connections_.size());
}

TransportError ChannelCore::unusable_error() const {
  if (failure_) return *failure_;
  return TransportError(Errc::closed, "the channel has finished: both sides shut down");
}

// ---- receiving -------------------------------------------------------------

asio::awaitable<void> ChannelCore::read_loop(Connection& connection) {
  auto self = shared_from_this();
  auto& reader = connection.reader;
  try {
    for (;;) {
      if (reader.blocked()) {
        co_await wait_for_memory();
        if (state_ != State::open) co_return;
        reader.retry();
        continue;
      }
      const auto buffer = reader.buffer();
      std::error_code ec;
      const auto n = co_await connection.socket.async_read_some(asio::buffer(buffer.data(), buffer.size()),
                                                                asio::redirect_error(asio::use_awaitable, ec));
      if (state_ != State::open) co_return;
      if (ec == asio::error::eof) {
        reader.end_of_stream();
        reading_finished(connection);
        co_return;
      }
      if (ec) throw std::system_error(ec);
      progressed();
      const auto epoch = reassembler_.memory_epoch();
      reader.commit(n);
      connection.counters.bytes_received = reader.payload_bytes();
      connection.counters.chunks_received = reader.chunks();
      if (reassembler_.has_ready()) receive_event_.notify_all();
      if (reassembler_.memory_epoch() != epoch) memory_event_.notify_all();
    }
  } catch (const TransportError& e) {
    fail(TransportError(static_cast<Errc>(e.code().value()), fmt::format("{}: {}", where(connection), e.what())));
  } catch (const std::system_error& e) {
    fail(TransportError(Errc::connection_failed,
                        fmt::format("{}: receiving: {}", where(connection), e.code().message())));
  }
}

asio::awaitable<void> ChannelCore::wait_for_memory() {
  const auto epoch = reassembler_.memory_epoch();
  const auto budget_epoch = budget_->epoch();
  // Memory another channel releases wakes this one too.
  budget_->on_next_release(this, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->memory_event_.notify_all();
  });
  while (state_ == State::open && reassembler_.memory_epoch() == epoch && budget_->epoch() == budget_epoch) {
    co_await memory_event_.wait();
  }
}

void ChannelCore::reading_finished(Connection& connection) {
  connection.reading_done = true;
  for (const auto& other : connections_) {
    if (!other->reading_done) return;
  }
  receive_done_ = true;
  receive_event_.notify_all();
  maybe_finish();
}

asio::awaitable<std::optional<Received>> ChannelCore::receive() {
  auto self = shared_from_this();
  for (;;) {
    if (reassembler_.has_ready()) {
      ++messages_received_;
      progressed();
      auto message = reassembler_.pop_received();
      memory_event_.notify_all();
      co_return message;
    }
    if (state_ == State::failed || state_ == State::closed) throw unusable_error();
    if (receive_done_) co_return std::nullopt;
    co_await receive_event_.wait();
  }
}

// ---- ending ----------------------------------------------------------------

asio::awaitable<void> ChannelCore::idle_watch() {
  auto self = shared_from_this();
  while (state_ == State::open) {
    const auto deadline = last_progress_ + options_.idle_timeout;
    if (Clock::now() >= deadline) {
      fail(TransportError(Errc::timed_out, idle_reason()));
      co_return;
    }
    idle_timer_.expires_at(deadline);
    std::error_code ignored;  // cancelled when the channel stops
    co_await idle_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

std::string ChannelCore::idle_reason() const {
  auto reason = fmt::format("no progress for {} ms (idle timeout): nothing was received, sent or taken by receive()",
                            options_.idle_timeout.count());
  std::size_t waiting = 0;
  for (const auto& connection : connections_) waiting += connection->reader.blocked() ? 1 : 0;
  if (waiting == 0) return reason;
  return reason + fmt::format(
                      "; {} of {} connections wait for memory: the channel holds {} bytes (limit {}), "
                      "its memory budget {} of {}",
                      waiting, connections_.size(), reassembler_.buffered_bytes(), options_.receive_memory_limit,
                      budget_->used(), budget_->limit());
}

void ChannelCore::maybe_finish() {
  if (send_done_ && receive_done_ && state_ == State::open) stop(State::finished);
}

void ChannelCore::fail(TransportError error) {
  if (state_ != State::open) return;  // the first cause wins
  failure_ = std::move(error);
  stop(State::failed);
}

void ChannelCore::close() {
  if (state_ != State::open) return;
  failure_ = TransportError(Errc::closed, "the channel was closed locally");
  stop(State::closed);
}

void ChannelCore::stop(State state) {
  state_ = state;
  for (auto& connection : connections_) {
    connection->final_tcp = read_tcp_info(connection->socket.native_handle());
    std::error_code ignored;
    connection->socket.close(ignored);
  }
  if (state != State::finished) {
    for (auto& message : unfinished_) {
      if (!message->done()) message->failed = true;
    }
    unfinished_.clear();
    send_queue_.clear();
  }
  idle_timer_.cancel();
  send_work_.notify_all();
  sent_event_.notify_all();
  receive_event_.notify_all();
  memory_event_.notify_all();
}

void ChannelCore::set_max_pacing_rate(std::uint64_t bytes_per_s) {
  for (const auto& connection : connections_) {
    if (connection->socket.is_open()) detail::set_max_pacing_rate(connection->socket.native_handle(), bytes_per_s);
  }
}

ChannelStats ChannelCore::stats() const {
  ChannelStats stats;
  stats.messages_sent = messages_sent_;
  stats.messages_received = messages_received_;
  for (const auto& connection : connections_) {
    auto entry = connection->counters;
    entry.tcp =
        connection->socket.is_open() ? read_tcp_info(connection->socket.native_handle()) : connection->final_tcp;
    stats.connections.push_back(std::move(entry));
  }
  return stats;
}

}  // namespace wanlab::transport::detail

namespace wanlab::transport {

using detail::ChannelCore;

// ---- SendTicket --------------------------------------------------------------

SendTicket::SendTicket(std::shared_ptr<ChannelCore> channel, std::shared_ptr<detail::Outgoing> message)
    : channel_(std::move(channel)), message_(std::move(message)) {}

std::uint64_t SendTicket::message_id() const { return message_->id; }
std::uint64_t SendTicket::size() const { return message_->size; }
bool SendTicket::done() const { return message_->done(); }
std::optional<SendTicket::clock::time_point> SendTicket::started_at() const { return message_->started_at; }
std::optional<SendTicket::clock::time_point> SendTicket::written_at() const { return message_->written_at; }
std::vector<StreamShare> SendTicket::streams() const {
  std::vector<StreamShare> used;
  for (const auto& stream : message_->streams)
    if (stream.bytes > 0) used.push_back(stream);
  return used;
}

asio::awaitable<void> SendTicket::wait() const {
  auto channel = channel_;
  auto message = message_;
  while (!message->done()) co_await channel->sent_event().wait();
  if (message->failed) throw channel->unusable_error();
}

// ---- Channel -----------------------------------------------------------------

Channel::Channel(std::shared_ptr<ChannelCore> core) : core_(std::move(core)) {}
Channel::Channel(Channel&&) noexcept = default;
Channel& Channel::operator=(Channel&& other) noexcept {
  if (this != &other) {
    if (core_) core_->close();
    core_ = std::move(other.core_);
  }
  return *this;
}
Channel::~Channel() {
  if (core_) core_->close();
}

SendTicket Channel::send(Message message) {
  auto outgoing = std::make_shared<detail::Outgoing>();
  outgoing->size = message.size();
  outgoing->buffers.emplace_back(message.data(), message.size());
  outgoing->owned = std::move(message);
  return core_->enqueue(std::move(outgoing));
}

SendTicket Channel::send_borrowed(std::span<const std::byte> bytes) {
  return send_borrowed(std::vector<asio::const_buffer>{asio::const_buffer(bytes.data(), bytes.size())});
}

SendTicket Channel::send_borrowed(std::vector<asio::const_buffer> buffers) {
  auto outgoing = std::make_shared<detail::Outgoing>();
  outgoing->size = asio::buffer_size(buffers);
  outgoing->buffers = std::move(buffers);
  return core_->enqueue(std::move(outgoing));
}

asio::awaitable<void> Channel::flush() { return core_->flush(); }
asio::awaitable<void> Channel::drain(std::chrono::milliseconds poll) {
  asio::steady_timer timer(core_->executor());
  while (is_open()) {
    std::uint64_t notsent = 0;
    for (const auto& connection : stats().connections) notsent += connection.tcp.notsent_bytes;
    if (notsent == 0) co_return;
    timer.expires_after(poll);
    co_await timer.async_wait(asio::use_awaitable);
  }
}
asio::awaitable<std::optional<Message>> Channel::receive() {
  auto received = co_await core_->receive();
  if (!received) co_return std::nullopt;
  co_return std::move(received->message);
}
asio::awaitable<std::optional<Received>> Channel::receive_timed() { return core_->receive(); }
asio::awaitable<void> Channel::shutdown() { return core_->shutdown(); }
void Channel::close() { core_->close(); }
bool Channel::is_open() const { return core_->is_open(); }
std::optional<TransportError> Channel::error() const { return core_->failure(); }
ChannelStats Channel::stats() const { return core_->stats(); }
void Channel::set_max_pacing_rate(std::uint64_t bytes_per_s) { core_->set_max_pacing_rate(bytes_per_s); }
std::uint64_t Channel::id() const { return core_->id(); }
unsigned Channel::connection_count() const { return core_->connection_count(); }
std::uint32_t Channel::chunk_size() const { return core_->chunk_size(); }
std::uint32_t Channel::peer_chunk_size() const { return core_->peer_chunk_size(); }
std::uint64_t Channel::peer_max_message_size() const { return core_->peer_max_message_size(); }
asio::ip::tcp::endpoint Channel::remote_endpoint() const { return core_->remote_endpoint(); }
asio::any_io_executor Channel::get_executor() const { return core_->executor(); }

std::uint64_t ChannelStats::bytes_sent() const {
  std::uint64_t total = 0;
  for (const auto& c : connections) total += c.bytes_sent;
  return total;
}
std::uint64_t ChannelStats::bytes_received() const {
  std::uint64_t total = 0;
  for (const auto& c : connections) total += c.bytes_received;
  return total;
}
std::uint64_t ChannelStats::retransmits() const {
  std::uint64_t total = 0;
  for (const auto& c : connections) total += c.tcp.total_retrans;
  return total;
}

}  // namespace wanlab::transport
