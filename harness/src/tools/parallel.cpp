// for_each_index (parallel.hpp).
#include "tools/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace wanlab::harness::detail {

void for_each_index(std::size_t count, int jobs, const std::function<void(std::size_t)>& work,
                    const std::function<void(std::size_t)>& in_order) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;  // guards the rest
  std::vector<bool> done(count, false);
  std::size_t reported = 0;
  std::exception_ptr failure;
  const auto run = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        work(i);
        const std::lock_guard lock(mutex);
        done[i] = true;
        while (reported < count && done[reported]) in_order(reported++);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        next = count;
        return;
      }
    }
  };
  {
    std::vector<std::jthread> threads;
    const std::size_t helpers = std::min(count, static_cast<std::size_t>(std::max(jobs, 1))) - (count > 0 ? 1 : 0);
    for (std::size_t t = 0; t < helpers; ++t) threads.emplace_back(run);
    run();
  }  // joined
  if (failure) std::rethrow_exception(failure);
}

}  // namespace wanlab::harness::detail
