// A received (or owned outgoing) message: a heap buffer of known size.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace wanlab::transport {

/// Owns `size()` bytes. Unlike std::vector the bytes are not zeroed when
/// allocated: the receiver writes every byte from the wire anyway.
class Message {
 public:
  Message() = default;
  /// size bytes, uninitialised.
  explicit Message(std::size_t size) : data_(size ? new std::byte[size] : nullptr), size_(size) {}
  static Message copy_of(std::span<const std::byte> bytes);

  std::byte* data() noexcept { return data_.get(); }
  const std::byte* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::span<std::byte> bytes() noexcept { return {data_.get(), size_}; }
  std::span<const std::byte> bytes() const noexcept { return {data_.get(), size_}; }
  std::vector<std::byte> to_vector() const { return {data_.get(), data_.get() + size_}; }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_ = 0;
};

}  // namespace wanlab::transport
