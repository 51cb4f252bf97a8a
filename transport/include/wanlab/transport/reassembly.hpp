// The receiving half of a channel, free of I/O: FrameReader turns one
// connection's bytes into chunks, Reassembler validates every chunk against the
// channel's state and assembles whole messages in order. Channel drives them
// from sockets; the fuzz target and tests drive them from byte buffers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/message.hpp"
#include "wanlab/transport/wire.hpp"

namespace wanlab::transport {

/// A whole message and when the header of its first chunk to arrive was read
/// (steady_clock: CLOCK_MONOTONIC on Linux).
struct Received {
  Message message;
  std::chrono::steady_clock::time_point first_chunk_at;
};

struct ReceiveLimits {
  std::uint32_t chunk_size = 0;        ///< the peer's chunk size (from its hello)
  std::uint64_t max_message_size = 0;  ///< largest message accepted
  std::uint64_t memory_limit = 0;      ///< see ChannelOptions::receive_memory_limit
  /// Shared with other channels, and outliving the Reassembler; null: one of
  /// its own without a limit (memory_limit alone bounds this channel).
  MemoryBudget* budget = nullptr;
};

/// Assembles the messages of one direction of a channel. Every call that gets
/// data from the peer validates it and throws TransportError(protocol_error)
/// with a one-line reason on anything a correct sender would not send: size
/// above the limit, misaligned or mis-sized chunk, offset outside the message,
/// a message id already delivered or implausibly far ahead, a size that
/// differs between chunks of a message, a duplicate chunk, chunks out of order
/// on a connection, data after a goodbye, a goodbye count that does not match.
///
/// Memory: a message is charged MemoryBudget::charge_of(size) against
/// memory_limit and the budget before anything is allocated; its buffer
/// commits memory only where chunks land, with huge pages only next to bytes
/// that have arrived (see decide_huge_pages in reassembly.cpp).
class Reassembler {
 public:
  static constexpr std::uint64_t kPerMessageOverhead = MemoryBudget::kPerMessageOverhead;
  /// A huge-page region of a message is judged by this many regions before it.
  static constexpr std::uint64_t kLookBackRegions = 64;

  Reassembler(ReceiveLimits limits, unsigned connections);
  /// Releases the charges of the messages it still holds.
  ~Reassembler();
  Reassembler(const Reassembler&) = delete;
  Reassembler& operator=(const Reassembler&) = delete;

  /// A data chunk's header arrived on `connection`. Returns where its payload
  /// goes (inside the message's buffer), or nullopt when taking a new message
  /// now would exceed the memory limit or the budget: call again once
  /// memory_epoch() or the budget's epoch() changed.
  std::optional<std::span<std::byte>> begin_chunk(unsigned connection, const wire::ChunkHeader& header);
  /// The payload of a chunk accepted by begin_chunk() has been written.
  void finish_chunk(const wire::ChunkHeader& header);
  /// A goodbye arrived on `connection`: the peer sent `messages_sent` messages.
  void goodbye(unsigned connection, std::uint64_t messages_sent);

  bool has_ready() const { return !ready_.empty(); }
  /// The next whole message in send order. Precondition: has_ready().
  Message pop_ready() { return pop_received().message; }
  /// The same, with when its first chunk arrived.
  Received pop_received();
  /// Every connection said goodbye and every message has been popped or is ready.
  bool all_goodbyes() const { return goodbyes_ == goodbye_seen_.size(); }

  /// What the messages not yet popped are charged (MemoryBudget::charge_of).
  std::uint64_t buffered_bytes() const { return buffered_; }
  /// Bytes of the messages not yet popped that are in memory (for tests and
  /// the fuzzer: a mincore() per mapped buffer).
  std::uint64_t resident_bytes() const;
  const MemoryBudget& budget() const { return *budget_; }
  /// Incremented whenever memory is released or the next-in-order message
  /// changes: a reader blocked in begin_chunk() may now proceed.
  std::uint64_t memory_epoch() const { return memory_epoch_; }
  std::uint64_t next_message_id() const { return next_deliver_; }
  std::uint64_t messages_completed() const { return completed_; }

 private:
  struct Pending {
    Message data;
    std::vector<bool> received;  // one bit per chunk
    std::uint64_t chunks_left = 0;
    std::uint64_t charge = 0;  // taken from memory_limit and the budget
    std::chrono::steady_clock::time_point first_chunk_at;
    // Per huge-page region of a mapped buffer (see decide_huge_pages):
    std::vector<std::uint32_t> region_finished;  // payload bytes of finished chunks in it
    std::vector<std::uint8_t> region_decided;    // 0: not yet touched; 1: huge pages; 2: small pages
  };
  struct Position {
    std::uint64_t message_id = 0;
    std::uint64_t offset = 0;
    bool any = false;
  };

  void check_header(unsigned connection, const wire::ChunkHeader& header) const;
  Pending* find_or_allocate(const wire::ChunkHeader& header);
  void decide_huge_pages(Pending& pending, const wire::ChunkHeader& header);
  void count_finished(Pending& pending, const wire::ChunkHeader& header);
  void deliver_in_order();
  std::uint64_t charge(std::uint64_t size) const { return MemoryBudget::charge_of(size, limits_.chunk_size); }

  ReceiveLimits limits_;
  std::unique_ptr<MemoryBudget> own_budget_;  // when limits_.budget is null
  MemoryBudget* budget_;
  std::uint64_t max_ids_ahead_;
  std::map<std::uint64_t, Pending> pending_;
  std::deque<Received> ready_;
  std::uint64_t next_deliver_ = 0;  // id of the next message to hand to ready_
  std::uint64_t buffered_ = 0;
  std::uint64_t memory_epoch_ = 0;
  std::uint64_t completed_ = 0;
  std::vector<Position> last_chunk_;  // per connection
  std::vector<bool> goodbye_seen_;
  std::size_t goodbyes_ = 0;
  std::optional<std::uint64_t> peer_message_count_;
};

/// Splits one connection's byte stream into frames and feeds them to the
/// Reassembler, verifying checksums. Payload bytes are read straight into
/// the message buffer.
class FrameReader {
 public:
  FrameReader(Reassembler& reassembler, unsigned connection);

  /// Where the next bytes from the connection go. Empty while blocked().
  std::span<std::byte> buffer();
  /// `n` bytes (1 <= n <= buffer().size()) were written into buffer().
  /// Throws TransportError (protocol_error, checksum_mismatch).
  void commit(std::size_t n);
  /// The reassembler has no memory for the next message yet.
  bool blocked() const { return state_ == State::blocked; }
  /// Retries a blocked chunk; true if no longer blocked.
  bool retry();
  /// The connection ended cleanly (EOF). Throws unless it ended right after a goodbye.
  void end_of_stream();
  bool said_goodbye() const { return state_ == State::after_goodbye; }

  std::uint64_t chunks() const { return chunks_; }
  std::uint64_t payload_bytes() const { return payload_bytes_; }

 private:
  enum class State { header, payload, blocked, after_goodbye };
  void on_header();
  void on_payload();

  Reassembler& reassembler_;
  unsigned connection_;
  State state_ = State::header;
  wire::ChunkHeaderBytes header_bytes_{};
  std::array<std::byte, 16> trailing_{};
  std::size_t filled_ = 0;
  wire::ChunkHeader header_;
  std::span<std::byte> payload_;
  std::uint64_t chunks_ = 0;
  std::uint64_t payload_bytes_ = 0;
};

}  // namespace wanlab::transport
