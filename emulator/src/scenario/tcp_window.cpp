#include "wanlab/emulator/tcp_window.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace wanlab::emulator {

double send_buffer_window_share(double wmem_bytes) {
  // (send buffer, share), measured (tcp_window.hpp); 2 MiB: the middle of 0.66-0.76.
  static constexpr std::array<std::pair<double, double>, 6> kMeasured{
      {{41943, 0.68}, {419430, 0.86}, {1 << 20, 0.74}, {2 << 20, 0.70}, {4 << 20, 0.66}, {16 << 20, 0.65}}};
  if (!(wmem_bytes > kMeasured.front().first)) return kMeasured.front().second;
  for (std::size_t i = 1; i < kMeasured.size(); ++i) {
    const auto [size, share] = kMeasured[i];
    if (wmem_bytes > size) continue;
    const auto [below, below_share] = kMeasured[i - 1];
    const double at = std::log2(wmem_bytes / below) / std::log2(size / below);
    return below_share + at * (share - below_share);
  }
  return kMeasured.back().second;
}

double stream_window_bytes(const HostSettings& host, bool paced) {
  const auto wmem = static_cast<double>(host.tcp_wmem_max.value_or(kDefaultTcpWmemMax));
  const double send = wmem * send_buffer_window_share(wmem) * (paced ? 1.0 : kUnpacedSendShareGain);
  const double receive =
      static_cast<double>(host.tcp_rmem_max.value_or(kDefaultTcpRmemMax)) * kReceiveBufferWindowShare;
  return std::min(send, receive);
}

double stream_window_limit_bps(const HostSettings& host, double rtt_s) {
  if (!(rtt_s > 0)) return std::numeric_limits<double>::infinity();
  return stream_window_bytes(host) * 8 / rtt_s;
}

}  // namespace wanlab::emulator
