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

/// tcpi_snd_cwnd (segments), tcpi_rtt (us) and tcpi_total_retrans
/// (segments retransmitted since the connection opened); zeros when unknown.
struct TcpWindow {
  std::uint32_t cwnd = 0;
  std::uint32_t srtt_us = 0;
  std::uint32_t retransmitted = 0;
};
TcpWindow read_tcp_window(int fd);

/// tcpi_rtt; 0 when unknown.
inline std::chrono::microseconds read_smoothed_rtt(int fd) {
  return std::chrono::microseconds(read_tcp_window(fd).srtt_us);
}

}  // namespace wanlab::transport::detail
