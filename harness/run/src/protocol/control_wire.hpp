// The control protocol's wire format (control.cpp): little-endian fields
// written by Writer and read back by Reader, whose every failure is a
// ControlError naming the frame's type, the byte and the field. Which fields a
// message has, in which order, is said once, in control_fields.hpp: both walk
// that list, through the named calls below (the Writer ignores the names).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "wanlab/harness/run/control.hpp"
#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness::control::wire {

constexpr std::uint32_t kMaxString = 4096;
constexpr int kMaxOpKind = static_cast<int>(OpKind::allreduce_wait);

// The bytes an Item takes on the wire with its lists empty (control_fields.hpp),
// which bounds a list's count by the bytes left before anything is allocated.
template <typename Item>
std::size_t encoded_size();

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
  std::size_t size() const { return bytes_.size(); }

  // A message's fields (control_fields.hpp).
  void u16(const char*, std::uint16_t v) { u16(v); }
  void u32(const char*, std::uint32_t v) { u32(v); }
  void u64(const char*, std::uint64_t v) { u64(v); }
  void i64(const char*, std::int64_t v) { i64(v); }
  void index(const char*, int v) { i32(v); }
  void index_or_none(const char*, int v) { i32(v); }
  void boolean(const char*, bool v) { boolean(v); }
  void string(const char*, const std::string& s) { string(s); }
  // Free text (an error's reason): cut to what a Reader takes.
  void text(const char*, const std::string& s) { string(s.substr(0, kMaxString)); }
  void op_kind(const char*, OpKind kind) { u8(static_cast<std::uint8_t>(kind)); }
  void indexes(const char*, const std::vector<int>& values) {
    count(values.size());
    for (int v : values) i32(v);
  }
  template <typename Item>
  void list(const char*, const std::vector<Item>& items) {
    count(items.size());
    for (const Item& item : items) fields(*this, item);
  }

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
  // A message's fields (control_fields.hpp).
  void u16(const char* field, std::uint16_t& v) { v = u16(field); }
  void u32(const char* field, std::uint32_t& v) { v = u32(field); }
  void u64(const char* field, std::uint64_t& v) { v = u64(field); }
  void i64(const char* field, std::int64_t& v) { v = i64(field); }
  void index(const char* field, int& v) { v = index(field); }
  void index_or_none(const char* field, int& v) { v = index_or_none(field); }
  void boolean(const char* field, bool& v) { v = boolean(field); }
  void string(const char* field, std::string& s) { s = string(field); }
  void text(const char* field, std::string& s) { s = string(field); }
  void op_kind(const char* field, OpKind& kind) {
    const int v = u8(field);
    if (v > kMaxOpKind) fail(fmt::format("{} is {}, expected 0..{}", field, v, kMaxOpKind));
    kind = static_cast<OpKind>(v);
  }
  void indexes(const char* field, std::vector<int>& values) {
    const std::size_t n = count(field, 4);
    const std::string item = std::string(field) + "[]";
    for (std::size_t i = 0; i < n; ++i) values.push_back(index(item.c_str()));
  }
  // Each item read and checked (check() in control_fields.hpp) in turn.
  template <typename Item>
  void list(const char* field, std::vector<Item>& items) {
    const std::size_t n = count(field, encoded_size<Item>());
    for (std::size_t i = 0; i < n; ++i) {
      Item item;
      fields(*this, item);
      check(*this, item);
      items.push_back(std::move(item));
    }
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

}  // namespace wanlab::harness::control::wire
