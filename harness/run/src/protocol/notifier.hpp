// Condition waiting for single-threaded coroutines: a waiter re-checks its
// condition each time something changed (notify) or its deadline passed.
#pragma once

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <set>

namespace wanlab::harness::run_detail {

using Clock = std::chrono::steady_clock;

class Notifier {
 public:
  // Wakes every waiter.
  void notify() {
    for (auto* timer : waiters_) timer->cancel();
  }

  // Returns when notified or at `deadline`, whichever is first.
  asio::awaitable<void> wait(Clock::time_point deadline) {
    asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
    Registration registration(waiters_, &timer);
    std::error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }

  // Waits until `ready()` holds; false if the deadline came first.
  template <typename Ready>
  asio::awaitable<bool> wait_for(Ready ready, Clock::time_point deadline = Clock::time_point::max()) {
    while (!ready()) {
      if (Clock::now() >= deadline) co_return false;
      co_await wait(deadline);
    }
    co_return true;
  }

 private:
  struct Registration {
    Registration(std::set<asio::steady_timer*>& set, asio::steady_timer* timer) : set_(set), timer_(timer) {
      set_.insert(timer_);
    }
    ~Registration() { set_.erase(timer_); }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    std::set<asio::steady_timer*>& set_;
    asio::steady_timer* timer_;
  };
  std::set<asio::steady_timer*> waiters_;
};

// Returns at `at_ns` on CLOCK_MONOTONIC (steady_clock's on Linux).
inline asio::awaitable<void> sleep_until_ns(std::int64_t at_ns) {
  asio::steady_timer timer(co_await asio::this_coro::executor, Clock::time_point(std::chrono::nanoseconds(at_ns)));
  std::error_code ignored;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

}  // namespace wanlab::harness::run_detail
