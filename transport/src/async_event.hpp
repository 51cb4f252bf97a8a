// Small coroutine helpers on top of Asio 1.22.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <memory>

namespace wanlab::transport::detail {

/// Wakes every coroutine waiting on it. Waiters re-check their condition in a
/// loop; with one thread per executor there is no lost wake-up between the
/// check and the wait.
class AsyncEvent {
 public:
  explicit AsyncEvent(const asio::any_io_executor& executor)
      : timer_(executor, asio::steady_timer::time_point::max()) {}

  asio::awaitable<void> wait() {
    std::error_code ignored;  // operation_aborted is the wake-up
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  void notify_all() { timer_.cancel(); }

 private:
  asio::steady_timer timer_;
};

/// Runs `on_expiry` once `timeout` passes, unless destroyed (or disarm()ed)
/// first. Used to close sockets whose operations must not wait forever.
template <typename OnExpiry>
class Watchdog {
 public:
  Watchdog(const asio::any_io_executor& executor, asio::steady_timer::duration timeout, OnExpiry on_expiry)
      : timer_(std::make_shared<asio::steady_timer>(executor, timeout)), armed_(std::make_shared<bool>(true)) {
    timer_->async_wait([timer = timer_, armed = armed_, on_expiry = std::move(on_expiry)](std::error_code ec) mutable {
      if (!ec && *armed) {
        *armed = false;
        on_expiry();
      }
    });
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() { disarm(); }

  /// True if the timeout passed and on_expiry ran.
  bool fired() const { return !*armed_ && !disarmed_; }
  void disarm() {
    if (*armed_) {
      *armed_ = false;
      disarmed_ = true;
      timer_->cancel();
    }
  }

 private:
  std::shared_ptr<asio::steady_timer> timer_;
  std::shared_ptr<bool> armed_;
  bool disarmed_ = false;
};

}  // namespace wanlab::transport::detail
