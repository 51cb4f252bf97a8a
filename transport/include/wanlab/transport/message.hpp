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
  /// Buffers from this size on are mapped (mmap) rather than taken from the heap.
  static constexpr std::size_t kMappedFrom = 8u << 20;

  Message() = default;
  /// size bytes, uninitialised; huge pages on all of a mapped buffer (for a
  /// writer that fills it from the start).
  explicit Message(std::size_t size);
  static Message copy_of(std::span<const std::byte> bytes);
  /// size bytes for a peer to fill in any order. A mapped buffer is aligned
  /// to huge pages but starts without them; allow_huge_pages() grants them
  /// region by region, so that one byte written far ahead does not commit a
  /// whole huge page (see Reassembler).
  static Message for_receiving(std::size_t size);
  /// The unit of allow_huge_pages(): a transparent huge page on x86-64.
  static constexpr std::size_t kHugePageRegion = 2u << 20;
  /// Lets region `region` (bytes [region, region + 1) x kHugePageRegion) of a
  /// mapped for_receiving() buffer use a huge page; nothing for other buffers.
  void allow_huge_pages(std::size_t region);
  /// A mapped for_receiving() buffer: huge pages only where allowed.
  bool grows_huge_pages() const noexcept { return grows_huge_pages_; }
  /// Bytes of a mapped buffer that are in memory (mincore); size() for a heap buffer.
  std::size_t resident_bytes() const;

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
  bool grows_huge_pages_ = false;
};

}  // namespace wanlab::transport
