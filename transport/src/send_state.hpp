// What a writer needs to know about its socket's send queue. Kept free of
// Asio: tcp_info.cpp includes <linux/tcp.h>.
#pragma once

#include <chrono>
#include <cstdint>

namespace wanlab::transport::detail {

struct SendState {
  std::uint32_t not_sent_bytes = 0;  // queued in the socket, not yet sent
  std::uint32_t buffer_free = 0;     // send buffer minus what is queued (kernel memory, as the kernel counts it)
  std::uint32_t buffer_size = 0;     // the send buffer (SO_SNDBUF as the kernel holds it)
};

/// SIOCOUTQNSD and SO_MEMINFO. On error (a closed socket) returns zeros.
SendState read_send_state(int fd);

/// tcpi_snd_cwnd (segments), tcpi_rtt (us), tcpi_total_retrans (segments
/// retransmitted since the connection opened) and tcpi_pacing_rate (bytes/s,
/// the kernel's current one, below any SO_MAX_PACING_RATE); zeros when unknown.
struct TcpWindow {
  std::uint32_t cwnd = 0;
  std::uint32_t srtt_us = 0;
  std::uint32_t retransmitted = 0;
  std::uint64_t pacing_bytes_per_s = 0;
};
TcpWindow read_tcp_window(int fd);

/// How long a writer that waits for room in its socket waits before it looks
/// again, when the kernel has not woken it first.
///
/// Linux wakes a writer (POLLOUT) only once a third of the send buffer is
/// free, but write() takes data whenever there is room. A writer that takes a
/// chunk only while little sits unsent (ChannelCore::takes_chunks) is blocked
/// right after each chunk by its own unsent bytes, which leave at the pacing
/// rate. While a third of the buffer is free the kernel wakes it when they
/// have left (TCP_NOTSENT_LOWAT), and it looks again only after a sixteenth
/// of the RTT, in case. Above two thirds the kernel does not, and a
/// connection whose window is its send buffer (one stream on a long-fat pipe)
/// would hold its queue at two thirds of the buffer and keep that much less
/// in flight; so there it looks again after one chunk's time at the pacing
/// rate, when that chunk has left. At most 8 ms, at least 0.2 ms (1 ms for
/// the sixteenth of the RTT).
std::chrono::microseconds retry_interval(std::uint64_t chunk_bytes, const SendState& state, const TcpWindow& window);

}  // namespace wanlab::transport::detail
