#include "worker/gpu_lease.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

#include "wanlab/base/sys.hpp"

namespace wanlab::harness::run_detail {

struct GpuLease::Shared {
  std::uint64_t magic;
  std::atomic<std::int64_t> busy_until_ns;
  std::atomic<std::int64_t> owner;
};

namespace {

// Processes agree on the word only if its operations are plain atomic
// instructions on the shared page, not a lock in one process's memory.
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::is_standard_layout_v<GpuLease::Shared>);

constexpr std::uint64_t kMagic = 0x31455341454c5047;  // "GPLEASE1"
constexpr std::size_t kFileBytes = 4096;

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::system_error(errno, std::generic_category(), fmt::format("GPU lease {}: {}", path, what));
}

GpuLease::Shared* map(const std::string& path, int fd) {
  void* at = ::mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) fail("mapping it", path);
  return static_cast<GpuLease::Shared*>(at);
}

}  // namespace

GpuLease GpuLease::create(const std::string& path) {
  base::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) fail("creating it", path);
  if (::ftruncate(fd.get(), kFileBytes) < 0) fail("sizing it", path);
  Shared* shared = map(path, fd.get());
  // A fresh file reads as zeros: the GPU is idle and nobody owns it.
  new (shared) Shared{kMagic, {0}, {static_cast<std::int64_t>(GpuOwner::none)}};
  return GpuLease(path, shared);
}

GpuLease GpuLease::open(const std::string& path) {
  base::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) fail("opening it", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0) fail("reading its size", path);
  if (!S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(kFileBytes))
    throw std::runtime_error(
        fmt::format("GPU lease {}: not a lease file ({} bytes, expected {})", path, st.st_size, kFileBytes));
  GpuLease lease(path, map(path, fd.get()));
  if (lease.shared_->magic != kMagic)
    throw std::runtime_error(fmt::format("GPU lease {}: not a lease file (bad magic)", path));
  return lease;
}

GpuLease::GpuLease(GpuLease&& other) noexcept
    : path_(std::move(other.path_)),
      shared_(std::exchange(other.shared_, nullptr)),
      held_until_ns_(other.held_until_ns_),
      work_end_ns_(other.work_end_ns_) {}

GpuLease& GpuLease::operator=(GpuLease&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    shared_ = std::exchange(other.shared_, nullptr);
    held_until_ns_ = other.held_until_ns_;
    work_end_ns_ = other.work_end_ns_;
  }
  return *this;
}

GpuLease::~GpuLease() { unmap(); }

void GpuLease::unmap() noexcept {
  if (shared_) ::munmap(shared_, kFileBytes);
  shared_ = nullptr;
}

GpuLease::Reservation GpuLease::reserve(std::int64_t now_ns, std::uint64_t duration_ns, GpuOwner owner,
                                        std::uint64_t hold_ns) {
  std::int64_t seen = shared_->busy_until_ns.load(std::memory_order_acquire);
  for (;;) {
    // Inside our own hold, nobody else has the GPU after our last work's end.
    const std::int64_t free_at = seen == held_until_ns_ ? std::min(seen, work_end_ns_) : seen;
    const std::int64_t start = std::max(now_ns, free_at);
    const std::int64_t end = start + static_cast<std::int64_t>(duration_ns);
    const std::int64_t until = std::max(seen, end + static_cast<std::int64_t>(hold_ns));
    if (shared_->busy_until_ns.compare_exchange_weak(seen, until, std::memory_order_acq_rel,
                                                     std::memory_order_acquire)) {
      shared_->owner.store(static_cast<std::int64_t>(owner), std::memory_order_release);
      held_until_ns_ = until;
      work_end_ns_ = end;
      return {start, end, start - now_ns};
    }
  }
}

std::optional<GpuLease::Reservation> GpuLease::try_lease(std::int64_t now_ns, std::uint64_t duration_ns,
                                                         GpuOwner owner) {
  std::int64_t seen = shared_->busy_until_ns.load(std::memory_order_acquire);
  const std::int64_t end = now_ns + static_cast<std::int64_t>(duration_ns);
  while (seen <= now_ns) {
    if (shared_->busy_until_ns.compare_exchange_weak(seen, end, std::memory_order_acq_rel, std::memory_order_acquire)) {
      shared_->owner.store(static_cast<std::int64_t>(owner), std::memory_order_release);
      return Reservation{now_ns, end, 0};
    }
  }
  return std::nullopt;
}

std::int64_t GpuLease::busy_until_ns() const { return shared_->busy_until_ns.load(std::memory_order_acquire); }

GpuOwner GpuLease::last_owner() const { return static_cast<GpuOwner>(shared_->owner.load(std::memory_order_acquire)); }

}  // namespace wanlab::harness::run_detail
