// A received (or owned outgoing) message: a heap buffer of known size.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace wanlab::transport {
namespace detail {
struct MessageRelease {
  std::size_t mapped = 0;  // bytes mmap()ed; 0: allocated with new[]
  void operator()(std::byte* bytes) const noexcept;
};
}  // namespace detail

/// Owns `size()` bytes. Unlike std::vector the bytes are not zeroed when
/// allocated: the receiver writes every byte from the wire anyway. Large
/// buffers are mapped with transparent huge pages where the kernel offers
/// them: a receiver writing a 1 GiB message into fresh 4 KiB pages takes a
/// page fault every 4 KiB, which cost more CPU than the receiving itself.
class Message {
 public:
  Message() = default;
  /// size bytes, uninitialised.
  explicit Message(std::size_t size);
  static Message copy_of(std::span<const std::byte> bytes);

  std::byte* data() noexcept { return data_.get(); }
  const std::byte* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::span<std::byte> bytes() noexcept { return {data_.get(), size_}; }
  std::span<const std::byte> bytes() const noexcept { return {data_.get(), size_}; }
  std::vector<std::byte> to_vector() const { return {data_.get(), data_.get() + size_}; }

 private:
  using Release = detail::MessageRelease;
  std::unique_ptr<std::byte[], Release> data_;
  std::size_t size_ = 0;
};

}  // namespace wanlab::transport
