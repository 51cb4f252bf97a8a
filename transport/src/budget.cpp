#include "wanlab/transport/budget.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "wanlab/transport/options.hpp"

namespace wanlab::transport {

MemoryBudget::MemoryBudget(std::uint64_t limit) : limit_(limit) {}

std::uint64_t MemoryBudget::largest_message(std::uint64_t bytes) {
  // charge_of grows with the size: the last size whose charge fits, by bisection.
  std::uint64_t fits = 0, too_big = bytes;  // charge_of(size) > size, so `bytes` itself never fits
  if (charge_of(0, kMinChunkSize) > bytes) return 0;
  while (too_big - fits > 1) {
    const auto middle = fits + (too_big - fits) / 2;
    (charge_of(middle, kMinChunkSize) <= bytes ? fits : too_big) = middle;
  }
  return fits;
}

void MemoryBudget::reserve_headroom(std::uint64_t charge) { headroom_ = std::max(headroom_, charge); }

bool MemoryBudget::try_charge(std::uint64_t bytes, bool next_in_order) {
  const auto free = limit_ - used_;
  const auto keep_free = next_in_order ? 0 : std::min(headroom_, limit_);
  if (bytes > free || free - bytes < keep_free) return false;
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  return true;
}

void MemoryBudget::release(std::uint64_t bytes) {
  if (bytes > used_) throw std::logic_error("MemoryBudget: released more than was charged");
  used_ -= bytes;
  ++epoch_;
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& [owner, wake] : waiters) wake();
}

void MemoryBudget::on_next_release(const void* owner, std::function<void()> wake) {
  for (auto& waiter : waiters_) {
    if (waiter.first == owner) {
      waiter.second = std::move(wake);
      return;
    }
  }
  waiters_.emplace_back(owner, std::move(wake));
}

void MemoryBudget::forget(const void* owner) {
  std::erase_if(waiters_, [owner](const auto& waiter) { return waiter.first == owner; });
}

}  // namespace wanlab::transport
