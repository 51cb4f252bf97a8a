// One end of a control connection on an Asio executor: reads whole messages,
// queues writes so that frames go out whole and in order. A Unix socket on one
// machine; TCP across machines, where both ends first prove they hold the
// run's secret and then tag every frame (control_auth.hpp).
#pragma once

#include <asio/awaitable.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/control_auth.hpp"
#include "protocol/handshake_deadline.hpp"
#include "wanlab/harness/run/control.hpp"

namespace wanlab::harness::run_detail {

class ControlSocket : public std::enable_shared_from_this<ControlSocket> {
 public:
  using Socket = asio::generic::stream_protocol::socket;

  explicit ControlSocket(Socket socket) : socket_(std::move(socket)) {}

  // The next message; nullopt at a clean end between frames. Throws
  // control::ControlError (malformed, truncated or wrongly tagged frame) or
  // std::system_error.
  asio::awaitable<std::optional<control::Message>> read();
  // Queues a message. A failed write closes the socket, so the reads of both
  // ends then end.
  void post(const control::Message& message);
  // Writes `message` now, blocking (for a last word before exiting).
  void send_now(const control::Message& message);
  void close();
  bool is_open() const { return socket_.is_open(); }

  // The coordinator's side of the handshake (control_auth.hpp), before any
  // frame; from then on frames are tagged both ways. Throws
  // std::runtime_error saying what the peer got wrong, or std::system_error.
  asio::awaitable<void> authenticate_worker(const RunSecret& secret);
  // The worker's side, blocking (before its event loop runs).
  void authenticate_to_coordinator(const RunSecret& secret);

 private:
  asio::awaitable<void> write_queued();
  std::vector<std::byte> frame_of(const control::Message& message);
  void use_tags(const RunSecret& secret, const Nonce& nonce_c, const Nonce& nonce_w, FrameTags::Side side);

  Socket socket_;
  control::FrameReader frames_;
  std::shared_ptr<FrameTags> tags_;  // shared with frames_' check
  std::deque<std::vector<std::byte>> outgoing_;
  bool writing_ = false;
};

// Where the coordinator listens: a Unix socket's path, or "tcp:ADDRESS:PORT"
// (IPv4) across machines.
struct ControlAddress {
  std::string path;        // empty for TCP
  std::uint32_t ipv4 = 0;  // host byte order
  std::uint16_t port = 0;
  bool tcp() const { return path.empty(); }
  std::string to_string() const;
};
// Throws std::invalid_argument naming what is wrong.
ControlAddress parse_control_address(const std::string& text);

// What a process connecting to `control_address` authenticates with: the
// run's secret (take_run_secret) for a coordinator over TCP, nothing for a
// Unix socket's path (or an address that does not parse: connect says why).
std::optional<RunSecret> run_secret_for(const std::string& control_address);

// Connects to the coordinator (a few tries over five seconds: the socket
// exists before any process starts, but a slow file system may show it late;
// a coordinator across machines is listening before it starts anyone). Over
// TCP it then authenticates with `secret` (run_secret_for(address)).
// Throws std::runtime_error naming the address.
std::shared_ptr<ControlSocket> connect_control(asio::io_context& io, const std::string& address,
                                               const std::optional<RunSecret>& secret);
// The same, taking the secret from the environment where the address needs one.
inline std::shared_ptr<ControlSocket> connect_control(asio::io_context& io, const std::string& address) {
  return connect_control(io, address, run_secret_for(address));
}

}  // namespace wanlab::harness::run_detail
