// Counters of a channel, per TCP connection, so users can see how load spread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace wanlab::transport {

/// A snapshot of the kernel's TCP_INFO for one connection (and its socket's
/// congestion control and buffer sizes). `valid` is false where the socket
/// could not be queried.
struct TcpInfo {
  bool valid = false;
  std::uint32_t rtt_us = 0;
  std::uint32_t rtt_var_us = 0;
  std::uint32_t min_rtt_us = 0;
  std::uint32_t snd_cwnd = 0;  ///< segments
  std::uint32_t snd_mss = 0;
  std::uint32_t total_retrans = 0;  ///< segments retransmitted over the connection's life
  std::uint64_t bytes_sent = 0;     ///< including retransmissions
  std::uint64_t bytes_retrans = 0;
  std::uint64_t bytes_acked = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t delivery_rate_bps = 0;  ///< bits per second, the kernel's latest estimate
  std::uint32_t notsent_bytes = 0;
  std::uint64_t rwnd_limited_us = 0;    ///< time limited by the peer's receive window
  std::uint64_t sndbuf_limited_us = 0;  ///< time limited by the send buffer
  std::uint64_t busy_us = 0;
  std::string congestion_control;
  int send_buffer = 0;  ///< SO_SNDBUF as the kernel reports it
  int receive_buffer = 0;
};

/// Reads TCP_INFO, TCP_CONGESTION, SO_SNDBUF and SO_RCVBUF of a TCP socket.
TcpInfo read_tcp_info(int fd);

/// One connection's part in sending one message (ChannelOptions::record_streams):
/// the payload bytes it carried, and its congestion window and smoothed RTT
/// (TCP_INFO) when the message's first chunk was taken.
struct StreamShare {
  unsigned index = 0;
  std::uint64_t bytes = 0;
  std::uint32_t cwnd = 0;           ///< segments (tcpi_snd_cwnd)
  std::uint32_t srtt_us = 0;        ///< tcpi_rtt: 0 until the connection has measured one
  std::uint32_t retransmitted = 0;  ///< tcpi_total_retrans: segments retransmitted since the connection opened
};

struct ConnectionStats {
  unsigned index = 0;
  std::uint64_t bytes_sent = 0;  ///< payload bytes of chunks written to the socket
  std::uint64_t chunks_sent = 0;
  std::uint64_t bytes_received = 0;  ///< payload bytes of chunks read from the socket
  std::uint64_t chunks_received = 0;
  /// Times this connection had chunks waiting for it but could not take one
  /// (its unsent backlog at not_sent_lowat, or no room in its send buffer for
  /// a whole chunk), and the total time it spent so.
  std::uint64_t stalls = 0;
  std::chrono::nanoseconds stalled_time{0};
  TcpInfo tcp;  ///< as of the stats() call, or as of the close
};

struct ChannelStats {
  std::vector<ConnectionStats> connections;
  std::uint64_t messages_sent = 0;      ///< messages whose every chunk was written
  std::uint64_t messages_received = 0;  ///< messages handed to receive()
  std::uint64_t bytes_sent() const;
  std::uint64_t bytes_received() const;
  std::uint64_t retransmits() const;  ///< sum of tcp.total_retrans
};

}  // namespace wanlab::transport
