// Applying SocketOptions to a TCP socket.
#pragma once

#include <cstdint>

#include "wanlab/transport/options.hpp"

namespace wanlab::transport::detail {

/// SO_SNDBUF / SO_RCVBUF and TCP_CONGESTION: before connect() or listen(), so
/// that the window scale negotiated in the SYN covers the receive buffer, and
/// so that an unusable congestion control fails before any connection exists.
void apply_before_connect(int fd, const SocketOptions& options);
/// TCP_CONGESTION alone (accepted sockets: the listener's may not carry over).
void apply_congestion_control(int fd, const SocketOptions& options);
/// The writer takes a chunk while less than `socket.not_sent_lowat` sits
/// unsent; the kernel's mark is one chunk higher, so that the whole chunk is
/// then accepted in one write (the kernel takes no data at or above its mark).
std::uint32_t kernel_not_sent_lowat(const ChannelOptions& options);
/// TCP_NODELAY, TCP_NOTSENT_LOWAT (kernel_not_sent_lowat), TCP_USER_TIMEOUT, keepalive.
void apply_connection_options(int fd, const ChannelOptions& options);
/// SO_MAX_PACING_RATE in bytes per second; 0 lifts the cap (~0 to the kernel).
void set_max_pacing_rate(int fd, std::uint64_t bytes_per_s);

}  // namespace wanlab::transport::detail
