// The life of one of a run's processes (a worker, a prefill worker, the
// decode sink) on its single-threaded io_context: SIGINT, SIGTERM and SIGHUP
// end it as a failure; an exception in a guarded coroutine ends it with its
// message; at the end a failure is told to the coordinator (failed) and
// printed, and the exit code says whether there was one.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "protocol/control_socket.hpp"

namespace wanlab::harness::run_detail {

// How long a prefill worker or decode sink waits, after its hello, to be
// told its part: the coordinator assigns them once every worker is up.
inline constexpr auto kAssignWait = std::chrono::seconds(60);

class ProcessLife {
 public:
  // `name` starts its lines on stderr ("wanlab worker 3").
  ProcessLife(asio::io_context& io, std::string name) : io_(io), name_(std::move(name)) {}

  // Runs `main` (guarded) and everything else on the io_context until it
  // stops; then tells `control` (if it is open) about a failure. Returns 1
  // after a failure, else 0.
  int run(asio::awaitable<void> main, const std::shared_ptr<ControlSocket>& control);
  // Any exception in `work` ends the process with its message.
  asio::awaitable<void> guarded(asio::awaitable<void> work);
  // Ends the process; the first reason counts, and none after end().
  void fail(const std::string& reason);
  // A normal end: stops the io_context, later failures do not count.
  void end();
  bool ending() const { return ending_; }

 private:
  asio::io_context& io_;
  std::string name_;
  bool ending_ = false;
  std::optional<std::string> failure_;
};

}  // namespace wanlab::harness::run_detail
