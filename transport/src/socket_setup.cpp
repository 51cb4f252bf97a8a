#include "socket_setup.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/transport/error.hpp"
#include "wanlab/transport/wire.hpp"

namespace wanlab::transport::detail {
namespace {

// For a message: the file's first line, "" if it cannot be read.
std::string read_first_line(const char* path) {
  try {
    const std::string text = base::read_kernel_file(path);
    return text.substr(0, text.find('\n'));
  } catch (const base::FileError&) {
    return "";
  }
}

void set_int(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
    throw TransportError(Errc::invalid_argument,
                         fmt::format("setting {} to {}: {}", what, value, std::strerror(errno)));
  }
}

void set_congestion_control(int fd, const std::string& name) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0) return;
  const int error = errno;
  throw TransportError(
      Errc::invalid_argument,
      fmt::format("setting congestion control '{}': {} (available: {}; allowed without CAP_NET_ADMIN: {})", name,
                  std::strerror(error), read_first_line("/proc/sys/net/ipv4/tcp_available_congestion_control"),
                  read_first_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control")));
}

}  // namespace

void apply_before_connect(int fd, const SocketOptions& options) {
  if (options.send_buffer > 0) set_int(fd, SOL_SOCKET, SO_SNDBUF, options.send_buffer, "SO_SNDBUF");
  if (options.receive_buffer > 0) set_int(fd, SOL_SOCKET, SO_RCVBUF, options.receive_buffer, "SO_RCVBUF");
  apply_congestion_control(fd, options);
}

void apply_congestion_control(int fd, const SocketOptions& options) {
  if (!options.congestion_control.empty()) set_congestion_control(fd, options.congestion_control);
}

std::uint32_t kernel_not_sent_lowat(const ChannelOptions& options) {
  const auto lowat = options.socket.not_sent_lowat;
  if (lowat == 0) return 0;
  const std::uint64_t with_a_chunk = std::uint64_t{lowat} + options.chunk_size + wire::kChunkHeaderSize;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(with_a_chunk, std::numeric_limits<int>::max()));
}

void apply_connection_options(int fd, const ChannelOptions& channel) {
  const auto& options = channel.socket;
  set_int(fd, IPPROTO_TCP, TCP_NODELAY, options.no_delay ? 1 : 0, "TCP_NODELAY");
  if (const auto lowat = kernel_not_sent_lowat(channel); lowat > 0) {
    set_int(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, static_cast<int>(lowat), "TCP_NOTSENT_LOWAT");
  }
  if (options.max_pacing_rate > 0) set_max_pacing_rate(fd, options.max_pacing_rate);
  if (options.user_timeout.count() > 0) {
    set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, static_cast<int>(options.user_timeout.count()), "TCP_USER_TIMEOUT");
  }
  if (options.keepalive) {
    set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, 30, "TCP_KEEPIDLE");
    set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, 10, "TCP_KEEPINTVL");
    set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, 3, "TCP_KEEPCNT");
  }
}

void set_max_pacing_rate(int fd, std::uint64_t bytes_per_s) {
  // 64 bits since Linux 4.20; ~0 is the kernel's "unlimited".
  const std::uint64_t rate = bytes_per_s > 0 ? bytes_per_s : ~std::uint64_t{0};
  if (::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate)) != 0) {
    throw TransportError(Errc::invalid_argument,
                         fmt::format("setting SO_MAX_PACING_RATE to {}: {}", bytes_per_s, std::strerror(errno)));
  }
}

}  // namespace wanlab::transport::detail
