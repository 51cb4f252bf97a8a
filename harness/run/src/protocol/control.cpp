#include "wanlab/harness/run/control.hpp"

#include <fmt/format.h>

#include <type_traits>
#include <utility>

#include "protocol/control_fields.hpp"
#include "protocol/control_wire.hpp"

namespace wanlab::harness::control {
namespace {

using namespace wire;

// Type bytes, in the order of the Message variant (index + 1).
constexpr const char* kTypeNames[] = {
    "hello",          "assign",          "listening",     "connect",         "ready",        "start",
    "gate_request",   "gate_grant",      "gate_release",  "report",          "stop",         "failed",
    "prefill_hello",  "sink_hello",      "sink_assign",   "prefill_assign",  "prefill_task", "prefill_done",
    "prefill_missed", "kv_gate_request", "kv_gate_grant", "kv_gate_release", "kv_sent",      "kv_arrived",
    "clock_probe",    "clock_reply",     "compute_done"};
static_assert(std::size(kTypeNames) == std::variant_size_v<Message>);

// The message of the variant's alternative I, read and checked.
template <std::size_t I>
Message read_alternative(Reader& in) {
  std::variant_alternative_t<I, Message> m;
  fields(in, m);
  check(in, m);
  return m;
}

template <std::size_t... I>
Message read_fields(std::size_t index, Reader& in, std::index_sequence<I...>) {
  using ReadOne = Message (*)(Reader&);
  static constexpr ReadOne kReaders[] = {&read_alternative<I>...};
  return kReaders[index](in);
}

std::uint32_t read_length(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

std::string type_name(const Message& message) { return kTypeNames[message.index()]; }

std::vector<std::byte> encode(const Message& message) {
  Writer out;
  out.u32(0);  // length, filled in below
  out.u8(static_cast<std::uint8_t>(message.index() + 1));
  std::visit([&](const auto& m) { fields(out, m); }, message);
  auto bytes = out.take();
  const std::size_t length = bytes.size() - 4;
  if (length > kMaxFrameBytes)
    throw ControlError(fmt::format("{} message of {} bytes exceeds the frame limit of {} bytes", type_name(message),
                                   length, kMaxFrameBytes));
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::byte>(length >> (8 * i));
  return bytes;
}

Message decode(std::span<const std::byte> body) {
  if (body.empty()) throw ControlError("malformed frame: empty (no type byte)");
  const int type = std::to_integer<int>(body[0]);
  if (type < 1 || type > static_cast<int>(std::size(kTypeNames)))
    throw ControlError(fmt::format("malformed frame: unknown type {} (expected 1..{})", type, std::size(kTypeNames)));
  const auto index = static_cast<std::size_t>(type - 1);
  Reader in(body.subspan(1), kTypeNames[index]);
  Message message = read_fields(index, in, std::make_index_sequence<std::variant_size_v<Message>>{});
  in.finish();
  return message;
}

void FrameReader::feed(std::span<const std::byte> bytes) {
  if (consumed_ > 0 && consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::optional<Message> FrameReader::next() {
  const std::size_t available = buffer_.size() - consumed_;
  if (available < 4) return std::nullopt;
  const std::uint32_t length = read_length(buffer_.data() + consumed_);
  if (length == 0 || length > kMaxFrameBytes)
    throw ControlError(fmt::format("malformed frame: length {} (expected 1..{})", length, kMaxFrameBytes));
  if (available - 4 < length + tag_bytes_) return std::nullopt;
  const std::span<const std::byte> frame(buffer_.data() + consumed_, 4 + length);
  const std::span<const std::byte> body = frame.subspan(4);
  ++frames_;
  const std::span<const std::byte> tag(buffer_.data() + consumed_ + 4 + length, tag_bytes_);
  if (check_tag_ && !check_tag_(frame, tag))
    throw ControlError(
        fmt::format("frame {}: its authentication tag does not match (forged, replayed or changed "
                    "on the way)",
                    frames_));
  consumed_ += 4 + length + tag_bytes_;
  Message message = decode(body);
  if (consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  return message;
}

void FrameReader::require_tags(std::size_t tag_bytes, TagCheck check) {
  tag_bytes_ = tag_bytes;
  check_tag_ = std::move(check);
}

}  // namespace wanlab::harness::control
