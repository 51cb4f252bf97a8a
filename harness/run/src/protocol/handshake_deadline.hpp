// The handshake's deadline: a connection that has not proved itself within
// kHandshakeTimeout is closed. Anyone on the network may connect across
// machines; a silent one would otherwise hold its descriptor until the run
// ends. Used by the coordinator's control connections, the workers' data
// channels and the decode sink's KV channels.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <system_error>

namespace wanlab::harness::run_detail {

// How long a handshake may take before the connection counts as failed.
inline constexpr std::chrono::seconds kHandshakeTimeout{20};

// Armed on construction; decide() (or the end of its scope) disarms it. The
// timer holds the connection: closing it fails the pending read, and the
// admitting coroutine may end (and its frame go) before close() returns. A
// deadline that fires just as the handshake is decided closes nothing: the
// flag outlives the timer, whose handler may already be queued.
template <class Connection>
class HandshakeDeadline {
 public:
  HandshakeDeadline(const asio::any_io_executor& executor, std::shared_ptr<Connection> connection,
                    std::chrono::steady_clock::duration timeout = kHandshakeTimeout)
      : timer_(executor, timeout) {
    timer_.async_wait([decided = decided_, connection = std::move(connection)](std::error_code ec) {
      if (!ec && !*decided) connection->close();
    });
  }
  ~HandshakeDeadline() { decide(); }
  HandshakeDeadline(const HandshakeDeadline&) = delete;
  HandshakeDeadline& operator=(const HandshakeDeadline&) = delete;

  // The handshake ended, proved or refused: the connection is the caller's.
  void decide() {
    *decided_ = true;
    timer_.cancel();
  }

 private:
  std::shared_ptr<bool> decided_ = std::make_shared<bool>(false);
  asio::steady_timer timer_;
};

}  // namespace wanlab::harness::run_detail
