#include "wanlab/emulator/tcp_window.hpp"

#include <algorithm>
#include <limits>

namespace wanlab::emulator {

double stream_window_bytes(const HostSettings& host) {
  const double send = static_cast<double>(host.tcp_wmem_max.value_or(kDefaultTcpWmemMax)) * kSendBufferWindowShare;
  const double receive = static_cast<double>(host.tcp_rmem_max.value_or(kDefaultTcpRmemMax)) * kReceiveBufferWindowShare;
  return std::min(send, receive);
}

double stream_window_limit_bps(const HostSettings& host, double rtt_s) {
  if (!(rtt_s > 0)) return std::numeric_limits<double>::infinity();
  return stream_window_bytes(host) * 8 / rtt_s;
}

}  // namespace wanlab::emulator
