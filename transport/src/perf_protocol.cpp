#include "perf_protocol.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

namespace wanlab::transport::perf {
namespace {
constexpr std::string_view kSummaryTag = "wanlab-perf-summary 1\n";
}  // namespace

Message encode_ack(std::uint64_t sequence) {
  Message message(kAckSize);
  for (std::size_t i = 0; i < kAckSize; ++i) message.data()[i] = static_cast<std::byte>(sequence >> (8 * (7 - i)));
  return message;
}

std::uint64_t decode_ack(std::span<const std::byte> bytes) {
  std::uint64_t sequence = 0;
  for (std::size_t i = 0; i < kAckSize && i < bytes.size(); ++i)
    sequence = (sequence << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  return sequence;
}

Message encode_summary(const Summary& summary) {
  const auto text = fmt::format("{}bytes={}\nmessages={}\nseconds={:.6f}\n", kSummaryTag, summary.bytes,
                                summary.messages, summary.seconds);
  return Message::copy_of(std::as_bytes(std::span(text)));
}

std::optional<Summary> parse_summary(std::span<const std::byte> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!text.starts_with(kSummaryTag)) return std::nullopt;
  Summary summary;
  auto rest = text.substr(kSummaryTag.size());
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    const auto line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    const auto equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    const auto key = line.substr(0, equals);
    const auto value = line.substr(equals + 1);
    if (key == "bytes") std::from_chars(value.data(), value.data() + value.size(), summary.bytes);
    if (key == "messages") std::from_chars(value.data(), value.data() + value.size(), summary.messages);
    if (key == "seconds") std::from_chars(value.data(), value.data() + value.size(), summary.seconds);
  }
  return summary;
}

}  // namespace wanlab::transport::perf
