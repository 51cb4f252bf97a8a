// Kept apart from Asio: <linux/tcp.h> has the full struct tcp_info (glibc's
// <netinet/tcp.h>, which Asio includes, stops at tcpi_total_retrans) and the
// two headers cannot be included together.
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "send_state.hpp"
#include "wanlab/transport/stats.hpp"

namespace wanlab::transport {

TcpInfo read_tcp_info(int fd) {
  TcpInfo info;
  tcp_info raw{};
  socklen_t length = sizeof(raw);
  if (fd < 0 || ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &raw, &length) != 0) return info;
  info.valid = true;
  info.rtt_us = raw.tcpi_rtt;
  info.rtt_var_us = raw.tcpi_rttvar;
  info.min_rtt_us = raw.tcpi_min_rtt;
  info.snd_cwnd = raw.tcpi_snd_cwnd;
  info.snd_mss = raw.tcpi_snd_mss;
  info.total_retrans = raw.tcpi_total_retrans;
  info.bytes_sent = raw.tcpi_bytes_sent;
  info.bytes_retrans = raw.tcpi_bytes_retrans;
  info.bytes_acked = raw.tcpi_bytes_acked;
  info.bytes_received = raw.tcpi_bytes_received;
  info.delivery_rate_bps = raw.tcpi_delivery_rate * 8;
  info.notsent_bytes = raw.tcpi_notsent_bytes;
  info.rwnd_limited_us = raw.tcpi_rwnd_limited;
  info.sndbuf_limited_us = raw.tcpi_sndbuf_limited;
  info.busy_us = raw.tcpi_busy_time;

  std::array<char, 16> name{};
  socklen_t name_length = name.size();
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), &name_length) == 0) {
    info.congestion_control.assign(name.data(), ::strnlen(name.data(), name_length));
  }
  socklen_t int_length = sizeof(int);
  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &info.send_buffer, &int_length);
  int_length = sizeof(int);
  ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &info.receive_buffer, &int_length);
  return info;
}

namespace detail {

SendState read_send_state(int fd) {
  SendState state;
  int not_sent = 0;
  if (::ioctl(fd, SIOCOUTQNSD, &not_sent) == 0 && not_sent > 0)
    state.not_sent_bytes = static_cast<std::uint32_t>(not_sent);
  std::array<std::uint32_t, SK_MEMINFO_VARS> memory{};
  socklen_t length = sizeof(memory);
  if (::getsockopt(fd, SOL_SOCKET, SO_MEMINFO, memory.data(), &length) == 0) {
    state.buffer_size = memory[SK_MEMINFO_SNDBUF];
    const auto queued = memory[SK_MEMINFO_WMEM_QUEUED];
    state.buffer_free = state.buffer_size > queued ? state.buffer_size - queued : 0;
  }
  return state;
}

TcpWindow read_tcp_window(int fd) {
  tcp_info raw{};
  socklen_t length = sizeof(raw);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &raw, &length) != 0) return {};
  return {raw.tcpi_snd_cwnd, raw.tcpi_rtt, raw.tcpi_total_retrans, raw.tcpi_pacing_rate};
}

std::chrono::microseconds retry_interval(std::uint64_t chunk_bytes, const SendState& state, const TcpWindow& window) {
  using std::chrono::microseconds;
  constexpr microseconds longest{8000};
  // ~0 is the kernel's "no pacing rate"; 0 an unknown one.
  const bool paced = window.pacing_bytes_per_s != 0 && window.pacing_bytes_per_s != ~std::uint64_t{0};
  const bool kernel_wakes = std::uint64_t{state.buffer_free} * 3 >= state.buffer_size;
  if (paced && !kernel_wakes) {
    const double chunk_us = 1e6 * static_cast<double>(chunk_bytes) / static_cast<double>(window.pacing_bytes_per_s);
    return std::clamp(microseconds(static_cast<std::int64_t>(chunk_us)), microseconds{200}, longest);
  }
  if (window.srtt_us == 0) return microseconds{1000};
  return std::clamp(microseconds(window.srtt_us / 16), microseconds{1000}, longest);
}

}  // namespace detail
}  // namespace wanlab::transport
