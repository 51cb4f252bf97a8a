// Applying SocketOptions to a TCP socket.
#pragma once

#include "wanlab/transport/options.hpp"

namespace wanlab::transport::detail {

/// SO_SNDBUF / SO_RCVBUF: before connect() or listen(), so the window scale
/// negotiated in the SYN covers the receive buffer.
void apply_buffer_options(int fd, const SocketOptions& options);
/// TCP_NODELAY, TCP_CONGESTION, TCP_NOTSENT_LOWAT, TCP_USER_TIMEOUT, keepalive.
void apply_connection_options(int fd, const SocketOptions& options);

}  // namespace wanlab::transport::detail
