#include "process/process_life.hpp"

#include <fmt/format.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/signal_set.hpp>
#include <csignal>
#include <cstring>

namespace wanlab::harness::run_detail {

int ProcessLife::run(asio::awaitable<void> main, const std::shared_ptr<ControlSocket>& control) {
  asio::signal_set signals(io_, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([this](std::error_code ec, int sig) {
    if (!ec) fail(fmt::format("terminated by signal {} ({})", sig, ::strsignal(sig)));
  });
  asio::co_spawn(io_, guarded(std::move(main)), asio::detached);
  io_.run();
  if (control && control->is_open() && failure_) control->send_now(control::Failed{*failure_});
  if (failure_) fmt::print(stderr, "{}: {}\n", name_, *failure_);
  return failure_ ? 1 : 0;
}

asio::awaitable<void> ProcessLife::guarded(asio::awaitable<void> work) {
  try {
    co_await std::move(work);
  } catch (const std::exception& error) {
    fail(error.what());
  }
}

void ProcessLife::fail(const std::string& reason) {
  if (!failure_ && !ending_) failure_ = reason;
  io_.stop();
}

void ProcessLife::end() {
  ending_ = true;
  io_.stop();
}

}  // namespace wanlab::harness::run_detail
