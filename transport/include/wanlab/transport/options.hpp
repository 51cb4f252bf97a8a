// Options of a Channel and of its TCP connections, with defaults chosen for
// long-fat pipes (high bandwidth x high RTT). docs/TRANSPORT.md explains them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "wanlab/transport/budget.hpp"

namespace wanlab::transport {

inline constexpr unsigned kMaxConnections = 64;
/// Acceptor: connections accepted but not yet part of a complete channel
/// (reading their hello, or waiting for the rest of their channel). At this
/// many, a new connection first sheds the one idle longest.
inline constexpr std::size_t kMaxPendingConnections = 256;
inline constexpr std::uint32_t kMinChunkSize = 1024;
inline constexpr std::uint32_t kMaxChunkSize = 64u << 20;
/// Chosen by measurement (docs/TRANSPORT.md, bench/transport/chunk_size.sh):
/// large enough that per-chunk costs vanish, small enough that a message
/// spreads over many connections and a stalled connection holds little.
inline constexpr std::uint32_t kDefaultChunkSize = 256u << 10;
inline constexpr std::uint64_t kDefaultMaxMessageSize = 1ull << 30;
/// Room for two messages of the default largest size, with their bookkeeping
/// (2 GiB and 256 KiB): one to arrive in order on some channel while the
/// others' messages under way share the rest.
inline constexpr std::uint64_t kDefaultMemoryBudget =
    2 * MemoryBudget::charge_of(kDefaultMaxMessageSize, kMinChunkSize);

/// The free send buffer (kernel memory) a connection needs before it takes a
/// chunk of `chunk_bytes` (payload and header): the chunk and a sixteenth for
/// the kernel's per-packet overhead, or a third of the buffer when that is
/// less (chunks too large for the buffer). The simulator's window model
/// (harness::chunk_room_bytes) follows it.
constexpr std::uint64_t send_room_for_chunk(std::uint64_t chunk_bytes, std::uint64_t buffer_bytes) {
  return std::min(chunk_bytes + chunk_bytes / 16, buffer_bytes / 3);
}

/// Options applied to every TCP connection of a channel.
struct SocketOptions {
  /// SO_SNDBUF in bytes. 0 keeps the kernel's autotuning, which grows the
  /// buffer up to net.ipv4.tcp_wmem[2]; a set value disables autotuning and is
  /// capped by net.core.wmem_max. The send buffer bounds a connection's window:
  /// rate <= buffer / RTT.
  int send_buffer = 0;
  /// SO_RCVBUF in bytes; 0 keeps autotuning (up to net.ipv4.tcp_rmem[2]).
  /// Set before connect/listen so that the window scale covers it.
  int receive_buffer = 0;
  /// TCP_CONGESTION by name ("cubic", "bbr"); empty keeps the system default.
  /// Only names in net.ipv4.tcp_allowed_congestion_control work without
  /// CAP_NET_ADMIN.
  std::string congestion_control;
  /// TCP_NODELAY: chunks are large, so Nagle only delays message tails.
  bool no_delay = true;
  /// Unsent bytes a connection may hold and still take a chunk (0: no limit,
  /// TCP_NOTSENT_LOWAT left unset). The writer hands chunks only to
  /// connections that are draining, so a stalled connection holds at most
  /// this much plus one chunk. The socket's TCP_NOTSENT_LOWAT is set one chunk
  /// higher, so that a chunk taken is accepted whole.
  std::uint32_t not_sent_lowat = 256u << 10;
  /// TCP_USER_TIMEOUT: fail a connection whose data stays unacknowledged this
  /// long (0: kernel default, many minutes). Note that it also fires when the
  /// peer's window stays closed, i.e. when the receiving application stalls.
  std::chrono::milliseconds user_timeout{0};
  /// SO_MAX_PACING_RATE in bytes per second (0: none). It also turns on TCP's
  /// own pacing where no fq qdisc paces, so that a connection spreads a
  /// window's worth of data over its round trip instead of sending it as one
  /// burst that a shallow bottleneck queue would drop.
  std::uint64_t max_pacing_rate = 0;
  /// SO_KEEPALIVE with 30 s idle, 10 s interval, 3 probes: an idle channel
  /// notices a vanished peer within about a minute.
  bool keepalive = true;
};

/// Options of a Channel (both for Channel::connect and Acceptor::listen).
struct ChannelOptions {
  /// Number of TCP connections, 1..kMaxConnections (the connecting side decides).
  unsigned connections = 8;
  /// Payload bytes per chunk this side sends, kMinChunkSize..kMaxChunkSize.
  std::uint32_t chunk_size = kDefaultChunkSize;
  /// Send a CRC32C of every chunk's payload (the receiver checks it whenever
  /// present, whatever its own setting).
  bool checksum = false;
  /// Largest message this side accepts from the peer: told in the handshake
  /// (the peer's send() refuses larger ones) and checked on every chunk
  /// before anything is allocated. The memory budget must hold one.
  std::uint64_t max_message_size = kDefaultMaxMessageSize;
  /// Receive memory: bytes of messages being assembled or waiting for
  /// receive(). Above it, connections stop reading new messages (TCP flow
  /// control pushes back on the sender) except the next message in order,
  /// so one message larger than the limit still gets through.
  std::uint64_t receive_memory_limit = 512ull << 20;
  /// Receive memory of all the channels of an Acceptor together (a channel
  /// from connect() has one of its own): see MemoryBudget. At least one
  /// message of max_message_size with its bookkeeping (MemoryBudget::charge_of).
  std::uint64_t memory_budget = kDefaultMemoryBudget;
  /// A budget shared further, e.g. by every channel of a process, in place of
  /// memory_budget. It must outlive the channels.
  std::shared_ptr<MemoryBudget> shared_memory_budget;
  /// A channel that moves no byte in either direction, and whose application
  /// takes no message, for this long fails with Errc::timed_out (0: never).
  /// Ends channels that a peer opened and left, or that wait on memory.
  std::chrono::milliseconds idle_timeout{30000};
  /// Whole of Channel::connect: resolve, TCP connects and handshakes.
  std::chrono::milliseconds connect_timeout{10000};
  /// Acceptor: time for a connection to send its hello, and for all
  /// connections of a channel to arrive (however slowly the bytes come).
  std::chrono::milliseconds handshake_timeout{10000};
  /// Per message sent, keep which connections carried it and each
  /// connection's cwnd and srtt when its first chunk was taken
  /// (SendTicket::streams). Costs one TCP_INFO read per connection per message.
  bool record_streams = false;
  /// Local address to bind connecting sockets to (empty: any).
  std::string local_address;
  SocketOptions socket;
};

/// Throws TransportError(invalid_argument) naming the first bad field.
void validate(const ChannelOptions& options);

}  // namespace wanlab::transport
