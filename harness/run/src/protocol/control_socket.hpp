// One end of a control connection on an Asio executor: reads whole messages,
// queues writes so that frames go out whole and in order.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/local/stream_protocol.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/harness/run/control.hpp"

namespace wanlab::harness::run_detail {

class ControlSocket : public std::enable_shared_from_this<ControlSocket> {
 public:
  using Socket = asio::local::stream_protocol::socket;

  explicit ControlSocket(Socket socket) : socket_(std::move(socket)) {}

  // The next message; nullopt at a clean end between frames. Throws
  // control::ControlError (malformed or truncated frame) or std::system_error.
  asio::awaitable<std::optional<control::Message>> read();
  // Queues a message. A failed write closes the socket, so the reads of both
  // ends then end.
  void post(const control::Message& message);
  // Writes `message` now, blocking (for a last word before exiting).
  void send_now(const control::Message& message);
  void close();
  bool is_open() const { return socket_.is_open(); }

 private:
  asio::awaitable<void> write_queued();

  Socket socket_;
  control::FrameReader frames_;
  std::deque<std::vector<std::byte>> outgoing_;
  bool writing_ = false;
};

// Connects to the coordinator's socket at `path` (a few tries over five
// seconds: the socket exists before any process starts, but a slow file
// system may show it late). Throws std::runtime_error naming the path.
std::shared_ptr<ControlSocket> connect_control(asio::io_context& io, const std::string& path);

}  // namespace wanlab::harness::run_detail
