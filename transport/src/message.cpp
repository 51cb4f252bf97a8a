#include "wanlab/transport/message.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

namespace wanlab::transport {
namespace {

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

std::byte* map_anonymous(std::size_t size, int advice) {
  void* mapped = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  ::madvise(mapped, size, advice);  // best effort: fails harmlessly without THP
  return static_cast<std::byte*>(mapped);
}

// `size` bytes starting at a huge-page boundary, so that region k of the
// buffer is exactly one huge page: map more, then give back the edges.
std::byte* map_aligned(std::size_t size, int advice) {
  constexpr std::size_t align = Message::kHugePageRegion;
  auto* mapped = map_anonymous(size + align, advice);
  const auto start = reinterpret_cast<std::uintptr_t>(mapped);
  const auto aligned = (start + align - 1) / align * align;
  const auto head = aligned - start;  // the kernel mapped length + align bytes from `start`
  const auto length = (size + page_size() - 1) / page_size() * page_size();
  if (head != 0) ::munmap(mapped, head);
  ::munmap(reinterpret_cast<std::byte*>(aligned) + length, align - head);
  return reinterpret_cast<std::byte*>(aligned);
}

}  // namespace

Message::Message(std::size_t size) : size_(size) {
  if (size == 0) return;
  if (size >= kMappedFrom) {
    data_ = std::unique_ptr<std::byte[], Release>(map_anonymous(size, MADV_HUGEPAGE), Release{size});
    return;
  }
  data_ = std::unique_ptr<std::byte[], Release>(new std::byte[size], Release{});
}

Message Message::for_receiving(std::size_t size) {
  if (size < kMappedFrom) return Message(size);
  Message message;
  message.size_ = size;
  // MADV_NOHUGEPAGE, not just no advice: with THP set to "always" the kernel
  // would otherwise back every 2 MiB the peer touches with a huge page, and
  // khugepaged would collapse sparse 4 KiB pages into huge ones.
  message.data_ = std::unique_ptr<std::byte[], Release>(map_aligned(size, MADV_NOHUGEPAGE), Release{size});
  message.grows_huge_pages_ = true;
  return message;
}

void Message::allow_huge_pages(std::size_t region) {
  const auto begin = region * kHugePageRegion;
  if (!grows_huge_pages_ || begin >= size_) return;
  ::madvise(data_.get() + begin, std::min(kHugePageRegion, size_ - begin), MADV_HUGEPAGE);
}

std::size_t Message::resident_bytes() const {
  if (!data_ || data_.get_deleter().mapped == 0) return size_;
  const auto page = page_size();
  std::vector<unsigned char> pages((size_ + page - 1) / page);
  if (::mincore(data_.get(), size_, pages.data()) != 0) return size_;
  std::size_t resident = 0;
  for (const auto in_memory : pages) resident += (in_memory & 1) != 0 ? page : 0;
  return resident;
}

void detail::MessageRelease::operator()(std::byte* bytes) const noexcept {
  if (mapped != 0) {
    ::munmap(bytes, mapped);
  } else {
    delete[] bytes;
  }
}

Message Message::copy_of(std::span<const std::byte> bytes) {
  Message message(bytes.size());
  if (!bytes.empty()) std::memcpy(message.data(), bytes.data(), bytes.size());
  return message;
}

}  // namespace wanlab::transport
