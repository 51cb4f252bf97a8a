// The control protocol's wire format (control.cpp): little-endian fields
// written by Writer and read back by Reader, whose every failure is a
// ControlError naming the frame's type, the byte and the field. The codecs of
// the prefill and decode-sink messages are in control_prefill.cpp.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "wanlab/harness/control.hpp"

namespace wanlab::harness::control::wire {

constexpr std::uint32_t kMaxString = 4096;

class Writer {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v) { little_endian(v, 2); }
  void u32(std::uint32_t v) { little_endian(v, 4); }
  void u64(std::uint64_t v) { little_endian(v, 8); }
  void i32(int v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void count(std::size_t n) { u32(static_cast<std::uint32_t>(n)); }
  void string(const std::string& s) {
    count(s.size());
    for (char c : s) u8(static_cast<std::uint8_t>(c));
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  void little_endian(std::uint64_t v, int size) {
    for (int i = 0; i < size; ++i) bytes_.push_back(static_cast<std::byte>(v >> (8 * i)));
  }
  std::vector<std::byte> bytes_;
};

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const char* type) : bytes_(bytes), type_(type) {}

  std::uint8_t u8(const char* field) { return static_cast<std::uint8_t>(little_endian(1, field)); }
  std::uint16_t u16(const char* field) { return static_cast<std::uint16_t>(little_endian(2, field)); }
  std::uint32_t u32(const char* field) { return static_cast<std::uint32_t>(little_endian(4, field)); }
  std::uint64_t u64(const char* field) { return little_endian(8, field); }
  std::int64_t i64(const char* field) { return static_cast<std::int64_t>(u64(field)); }
  int i32(const char* field) { return static_cast<int>(static_cast<std::int32_t>(u32(field))); }
  // Ids, indexes and counts of things: 0..INT32_MAX.
  int index(const char* field) {
    const int v = i32(field);
    if (v < 0) fail(fmt::format("{} is {}, expected >= 0", field, v));
    return v;
  }
  int index_or_none(const char* field) {
    const int v = i32(field);
    if (v < -1) fail(fmt::format("{} is {}, expected >= -1", field, v));
    return v;
  }
  bool boolean(const char* field) {
    const auto v = u8(field);
    if (v > 1) fail(fmt::format("{} is {}, expected 0 or 1", field, v));
    return v == 1;
  }
  // A list length, checked against the bytes left at `min_item_bytes` each.
  std::size_t count(const char* field, std::size_t min_item_bytes) {
    const std::uint32_t n = u32(field);
    if (min_item_bytes && n > left() / min_item_bytes)
      fail(fmt::format("{} says {} items, but only {} bytes follow", field, n, left()));
    return n;
  }
  std::string string(const char* field) {
    const std::size_t n = count(field, 1);
    if (n > kMaxString) fail(fmt::format("{} is {} bytes long, at most {} allowed", field, n, kMaxString));
    std::string s(n, '\0');
    std::memcpy(s.data(), bytes_.data() + at_, n);
    at_ += n;
    return s;
  }
  void finish() {
    if (left()) fail(fmt::format("{} bytes left over", left()));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ControlError(fmt::format("malformed {} frame at byte {}: {}", type_, at_ + 1, what));
  }

 private:
  std::size_t left() const { return bytes_.size() - at_; }
  std::uint64_t little_endian(int size, const char* field) {
    if (left() < static_cast<std::size_t>(size)) fail(fmt::format("truncated in {}", field));
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) v |= std::to_integer<std::uint64_t>(bytes_[at_ + i]) << (8 * i);
    at_ += size;
    return v;
  }
  std::span<const std::byte> bytes_;
  const char* type_;
  std::size_t at_ = 0;
};

// BubbleTea's messages (control_prefill.cpp).
void write_fields(Writer& out, const PrefillHello& m);
void write_fields(Writer& out, const SinkHello& m);
void write_fields(Writer& out, const SinkAssign& m);
void write_fields(Writer& out, const PrefillAssign& m);
void write_fields(Writer& out, const PrefillTask& m);
void write_fields(Writer& out, const PrefillDone& m);
void write_fields(Writer& out, const PrefillMissed& m);
void write_fields(Writer& out, const KvGateRequest& m);
void write_fields(Writer& out, const KvGateGrant& m);
void write_fields(Writer& out, const KvGateRelease& m);
void write_fields(Writer& out, const KvSent& m);
void write_fields(Writer& out, const KvArrived& m);
Message read_sink_hello(Reader& in);
Message read_prefill_hello(Reader& in);
Message read_sink_assign(Reader& in);
Message read_prefill_assign(Reader& in);
Message read_prefill_task(Reader& in);
Message read_prefill_done(Reader& in);
Message read_prefill_missed(Reader& in);
Message read_kv_sent(Reader& in);
Message read_kv_arrived(Reader& in);

template <typename KvGateMessage>
Message read_kv_gate(Reader& in) {
  KvGateMessage m;
  m.batch = in.index("batch");
  m.piece = in.index("piece");
  return m;
}

}  // namespace wanlab::harness::control::wire
