// Receive memory shared by channels: the bound on what peers can make a
// process hold. docs/TRANSPORT.md, "Limits on what a peer can make us hold".
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace wanlab::transport {

/// Bytes of receive memory shared by several channels (all channels of an
/// Acceptor, or whichever channels are given the same budget). A message is
/// charged here in full (MemoryBudget::charge_of) when its first chunk
/// arrives, before a byte of it is stored, and released when receive() hands
/// it over or its channel ends. Its buffer commits memory only as its bytes
/// arrive (Reassembler), so a charge only reserves, and what a process holds
/// for its peers stays under limit() whatever they send.
///
/// Charging the whole message up front, rather than page by page, means a
/// message once admitted can always be completed: channels never wait for each
/// other's partly received messages. To keep every channel's next message in
/// order admissible, the others leave room for the largest message any of the
/// channels accepts (the headroom). A reader that finds no room stops reading,
/// and TCP flow control holds its sender back; the channel's idle_timeout ends
/// a wait that lasts.
///
/// Not thread-safe: share a budget only between channels that run on one
/// thread, as channels themselves do.
class MemoryBudget {
 public:
  /// Bookkeeping charged per message on top of its bytes and its chunk
  /// record, so that a flood of empty messages is bounded too.
  static constexpr std::uint64_t kPerMessageOverhead = 128;

  explicit MemoryBudget(std::uint64_t limit);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  std::uint64_t limit() const { return limit_; }
  std::uint64_t used() const { return used_; }
  /// The most ever used at once.
  std::uint64_t peak() const { return peak_; }
  std::uint64_t headroom() const { return headroom_; }

  /// What a message of `size` bytes sent in `chunk_size`-byte chunks is
  /// charged: its bytes, its one bit per chunk, 8 bytes per 2 MiB of it (the
  /// receiver's huge-page bookkeeping), and kPerMessageOverhead.
  static constexpr std::uint64_t charge_of(std::uint64_t size, std::uint32_t chunk_size) {
    const auto chunks = size == 0 ? 1 : (size - 1) / chunk_size + 1;
    const auto record = (chunks + 63) / 64 * 8;  // std::vector<bool> keeps whole 64-bit words
    const auto regions = (size >> 21) + 1;
    const auto extra = record + regions * 8 + kPerMessageOverhead;
    return size > UINT64_MAX - extra ? UINT64_MAX : size + extra;  // saturates: such a size never fits
  }
  /// The largest message (at any chunk size) whose charge fits in `bytes`.
  static std::uint64_t largest_message(std::uint64_t bytes);

  // ---- for the channels sharing the budget ----------------------------------

  /// A channel accepting messages whose charge may reach `charge` joins: from
  /// now on, charges other than a channel's next message leave that much free.
  void reserve_headroom(std::uint64_t charge);
  /// Charges `bytes` if they fit: within the limit for `next_in_order`, else
  /// within the limit less the headroom.
  bool try_charge(std::uint64_t bytes, bool next_in_order);
  void release(std::uint64_t bytes);

  /// Counts releases: a reader that found no room may try again once it changed.
  std::uint64_t epoch() const { return epoch_; }
  /// Calls `wake` at the next release (once; a later call for the same
  /// `owner` replaces it). Lets a blocked channel hear of memory that another
  /// channel released.
  void on_next_release(const void* owner, std::function<void()> wake);
  void forget(const void* owner);

 private:
  std::uint64_t limit_;
  std::uint64_t used_ = 0;
  std::uint64_t peak_ = 0;
  std::uint64_t headroom_ = 0;
  std::uint64_t epoch_ = 0;
  std::vector<std::pair<const void*, std::function<void()>>> waiters_;
};

}  // namespace wanlab::transport
