#include "protocol/control_socket.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <array>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace wanlab::harness::run_detail {

asio::awaitable<std::optional<control::Message>> ControlSocket::read() {
  std::array<std::byte, 64 * 1024> buffer;
  for (;;) {
    if (auto message = frames_.next()) co_return message;
    std::error_code ec;
    const std::size_t n =
        co_await socket_.async_read_some(asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::eof) {
      if (frames_.pending())
        throw control::ControlError("connection closed in the middle of a frame (" + std::to_string(frames_.pending()) +
                                    " bytes of it received)");
      co_return std::nullopt;
    }
    if (ec) throw std::system_error(ec, "reading the control socket");
    frames_.feed(std::span<const std::byte>(buffer.data(), n));
  }
}

void ControlSocket::post(const control::Message& message) {
  outgoing_.push_back(control::encode(message));
  if (writing_) return;
  writing_ = true;
  asio::co_spawn(
      socket_.get_executor(), [self = shared_from_this()] { return self->write_queued(); }, asio::detached);
}

asio::awaitable<void> ControlSocket::write_queued() {
  while (!outgoing_.empty()) {
    const std::vector<std::byte> frame = std::move(outgoing_.front());
    outgoing_.pop_front();
    std::error_code ec;
    co_await asio::async_write(socket_, asio::buffer(frame), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      outgoing_.clear();
      close();
      break;
    }
  }
  writing_ = false;
}

void ControlSocket::send_now(const control::Message& message) {
  const auto frame = control::encode(message);
  std::error_code ec;
  asio::write(socket_, asio::buffer(frame), ec);
}

void ControlSocket::close() {
  std::error_code ignored;
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
}

std::shared_ptr<ControlSocket> connect_control(asio::io_context& io, const std::string& path) {
  ControlSocket::Socket socket(io);
  std::error_code ec;
  for (int attempt = 0; attempt < 50; ++attempt) {
    socket.connect(asio::local::stream_protocol::endpoint(path), ec);
    if (!ec) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (ec) throw std::runtime_error("connecting to the coordinator at " + path + ": " + ec.message());
  return std::make_shared<ControlSocket>(std::move(socket));
}

}  // namespace wanlab::harness::run_detail
