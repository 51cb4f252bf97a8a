// The few messages `wanlab perf` exchanges besides the test data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "wanlab/transport/message.hpp"

namespace wanlab::transport::perf {

/// The client's first message.
inline constexpr std::string_view kRequest = "wanlab-perf 1";
/// Acknowledgement of one data message: its sequence number, big-endian.
inline constexpr std::size_t kAckSize = 8;

Message encode_ack(std::uint64_t sequence);
std::uint64_t decode_ack(std::span<const std::byte> bytes);

/// The server's count, sent once the client has shut down.
struct Summary {
  std::uint64_t bytes = 0;
  std::uint64_t messages = 0;
  double seconds = 0;
};
Message encode_summary(const Summary& summary);
/// nullopt unless `bytes` is a summary.
std::optional<Summary> parse_summary(std::span<const std::byte> bytes);

}  // namespace wanlab::transport::perf
