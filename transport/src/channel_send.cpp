// The channel's sending side: messages queued, pulled chunk by chunk by
// whichever connection can take one (send_state.hpp decides when), written,
// and the goodbye at the end. Receiving and ending are in channel.cpp.
#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/write.hpp>

#include "channel_core.hpp"
#include "send_state.hpp"
#include "socket_setup.hpp"
#include "wanlab/transport/crc32c.hpp"

namespace wanlab::transport::detail {
namespace {

/// Drops the first `written` bytes from a gather list.
void consume(std::vector<asio::const_buffer>& pieces, std::size_t written) {
  auto first = pieces.begin();
  while (first != pieces.end() && written >= first->size()) {
    written -= first->size();
    ++first;
  }
  pieces.erase(pieces.begin(), first);
  if (!pieces.empty()) pieces.front() += written;
}

std::uint32_t checksum_of(const std::vector<asio::const_buffer>& pieces) {
  std::uint32_t crc = 0;
  for (const auto& piece : pieces) crc = crc32c({static_cast<const std::byte*>(piece.data()), piece.size()}, crc);
  return crc;
}

}  // namespace

SendTicket ChannelCore::enqueue(std::shared_ptr<Outgoing> message) {
  if (state_ != State::open) throw unusable_error();
  if (shutting_down_) throw TransportError(Errc::invalid_argument, "send after shutdown()");
  if (message->size > peer_max_message_size_) {
    throw TransportError(Errc::message_too_large, fmt::format("message of {} bytes exceeds the peer's limit of {}",
                                                              message->size, peer_max_message_size_));
  }
  message->id = next_message_id_++;
  message->chunks_total = wire::chunk_count(message->size, options_.chunk_size);
  send_queue_.push_back(message);
  unfinished_.push_back(message);
  send_work_.notify_all();
  return SendTicket(shared_from_this(), std::move(message));
}

asio::awaitable<void> ChannelCore::write_loop(Connection& connection) {
  auto self = shared_from_this();
  try {
    for (;;) {
      while (state_ == State::open && send_queue_.empty() && !shutting_down_) co_await send_work_.wait();
      if (state_ != State::open) co_return;
      if (send_queue_.empty()) {
        co_await write_goodbye(connection);
        co_return;
      }
      const SendState state = read_send_state(connection.socket.native_handle());
      if (!takes_chunks(connection, state)) {
        co_await wait_for_room(connection, state);
        continue;  // the queue may have drained meanwhile
      }
      stall_ended(connection);
      connection.gather.clear();
      connection.gather.push_back(asio::buffer(connection.header));
      const auto job = pull_chunk(connection.gather);
      co_await write_chunk(connection, job);
      // Let the other writers that were woken for this work take the next
      // chunks: a small message then goes out over several connections at
      // once instead of queuing in the first writer's congestion window.
      co_await asio::post(executor_, asio::use_awaitable);
    }
  } catch (const std::system_error& e) {
    fail(
        TransportError(Errc::connection_failed, fmt::format("{}: sending: {}", where(connection), e.code().message())));
  }
}

// A connection takes a chunk only when it can write all of it now, so that a
// chunk never waits in a connection that is not draining while the rest of
// its message has gone: less than `not_sent_lowat` sits in the socket unsent
// (the kernel's mark is one chunk higher, see kernel_not_sent_lowat), and the
// send buffer has room for the chunk and the kernel's per-packet overhead (or
// a third of the buffer, when chunks are larger than that).
bool ChannelCore::takes_chunks(Connection& connection, const SendState& state) const {
  if (connection.broken) return true;  // the write reports why
  const auto lowat = options_.socket.not_sent_lowat;
  if (lowat != 0 && state.not_sent_bytes >= lowat) return false;
  return state.buffer_free >= send_room_for_chunk(chunk_wire_bytes(), state.buffer_size);
}

asio::awaitable<void> ChannelCore::wait_for_room(Connection& connection, std::optional<SendState> known) {
  using namespace asio::experimental::awaitable_operators;
  if (!connection.stalled_since) {
    ++connection.counters.stalls;
    connection.stalled_since = Clock::now();
  }
  const int fd = connection.socket.native_handle();
  // poll() also marks the socket as waiting for room, which is what makes the
  // kernel wake writers and grow an autotuned send buffer.
  pollfd entry{fd, POLLOUT, 0};
  if (::poll(&entry, 1, 0) == 1 && (entry.revents & (POLLERR | POLLHUP)) != 0) {
    connection.broken = true;
    co_return;
  }
  const SendState state = known ? *known : read_send_state(fd);
  connection.retry_timer.expires_after(retry_interval(chunk_wire_bytes(), state, read_tcp_window(fd)));
  co_await (connection.socket.async_wait(asio::ip::tcp::socket::wait_write, asio::use_awaitable) ||
            connection.retry_timer.async_wait(asio::use_awaitable));
}

void ChannelCore::stall_ended(Connection& connection) {
  if (!connection.stalled_since) return;
  connection.counters.stalled_time += Clock::now() - *connection.stalled_since;
  connection.stalled_since.reset();
}

ChannelCore::ChunkJob ChannelCore::pull_chunk(std::vector<asio::const_buffer>& pieces) {
  auto& message = *send_queue_.front();
  ChunkJob job{send_queue_.front(), message.next_offset,
               wire::chunk_length(message.size, message.next_offset, options_.chunk_size)};
  if (!message.started_at) {
    message.started_at = Clock::now();
    if (options_.record_streams) message.streams = stream_windows();
  }

  std::size_t needed = job.length;
  while (needed > 0) {
    const auto& buffer = message.buffers[message.cursor_buffer];
    const auto take = std::min(needed, buffer.size() - message.cursor_offset);
    if (take > 0) pieces.emplace_back(static_cast<const std::byte*>(buffer.data()) + message.cursor_offset, take);
    message.cursor_offset += take;
    needed -= take;
    if (message.cursor_offset == buffer.size()) {
      ++message.cursor_buffer;
      message.cursor_offset = 0;
    }
  }
  message.next_offset += job.length;
  if (++message.chunks_handed_out == message.chunks_total) send_queue_.pop_front();
  return job;
}

std::vector<StreamShare> ChannelCore::stream_windows() const {
  std::vector<StreamShare> streams;
  for (const auto& connection : connections_) {
    const auto window = read_tcp_window(connection->socket.native_handle());
    streams.push_back(StreamShare{connection->index, 0, window.cwnd, window.srtt_us, window.retransmitted});
  }
  return streams;
}

asio::awaitable<void> ChannelCore::write_chunk(Connection& connection, const ChunkJob& job) {
  wire::ChunkHeader header;
  header.type = wire::FrameType::data;
  header.length = job.length;
  header.message_id = job.message->id;
  header.message_size = job.message->size;
  header.offset = job.offset;
  if (options_.checksum) {
    header.flags = wire::kFlagChecksum;
    header.checksum = checksum_of({connection.gather.begin() + 1, connection.gather.end()});
  }
  connection.header = wire::encode(header);
  auto& pieces = connection.gather;
  while (!pieces.empty()) {
    std::error_code ec;
    const auto written = connection.socket.write_some(pieces, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      co_await wait_for_room(connection);
      continue;
    }
    if (ec) throw std::system_error(ec);
    stall_ended(connection);
    progressed();
    consume(pieces, written);
  }
  connection.counters.bytes_sent += job.length;
  ++connection.counters.chunks_sent;
  if (!job.message->streams.empty()) job.message->streams[connection.index].bytes += job.length;
  chunk_written(job);
}

void ChannelCore::chunk_written(const ChunkJob& job) {
  auto& message = *job.message;
  if (++message.chunks_written < message.chunks_total || message.failed) return;
  message.written_at = Clock::now();
  message.owned = Message();
  message.buffers.clear();
  ++messages_sent_;
  while (!unfinished_.empty() && unfinished_.front()->done()) unfinished_.pop_front();
  sent_event_.notify_all();
}

asio::awaitable<void> ChannelCore::write_goodbye(Connection& connection) {
  wire::ChunkHeader goodbye;
  goodbye.type = wire::FrameType::goodbye;
  goodbye.message_id = next_message_id_;
  connection.header = wire::encode(goodbye);
  co_await asio::async_write(connection.socket, asio::buffer(connection.header), asio::use_awaitable);
  progressed();
  std::error_code ignored;
  connection.socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  connection.writing_done = true;
  for (const auto& other : connections_) {
    if (!other->writing_done) co_return;
  }
  send_done_ = true;
  sent_event_.notify_all();
  maybe_finish();
}

asio::awaitable<void> ChannelCore::flush() {
  auto self = shared_from_this();
  while (state_ == State::open && !unfinished_.empty()) co_await sent_event_.wait();
  if (!unfinished_.empty()) throw unusable_error();
}

asio::awaitable<void> ChannelCore::shutdown() {
  auto self = shared_from_this();
  if (state_ == State::failed || state_ == State::closed) throw unusable_error();
  shutting_down_ = true;
  send_work_.notify_all();
  while (state_ == State::open && !send_done_) co_await sent_event_.wait();
  if (!send_done_) throw unusable_error();
}

}  // namespace wanlab::transport::detail
