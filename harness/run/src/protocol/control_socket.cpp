#include "protocol/control_socket.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <array>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <stdexcept>
#include <thread>

#include "wanlab/base/parse.hpp"

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

std::vector<std::byte> ControlSocket::frame_of(const control::Message& message) {
  std::vector<std::byte> frame = control::encode(message);
  if (tags_) {
    const auto tag = tags_->sign(frame);
    frame.insert(frame.end(), tag.begin(), tag.end());
  }
  return frame;
}

void ControlSocket::post(const control::Message& message) {
  outgoing_.push_back(frame_of(message));
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
  const auto frame = frame_of(message);
  std::error_code ec;
  asio::write(socket_, asio::buffer(frame), ec);
}

void ControlSocket::close() {
  std::error_code ignored;
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void ControlSocket::use_tags(const RunSecret& secret, const Nonce& nonce_c, const Nonce& nonce_w,
                             FrameTags::Side side) {
  tags_ = std::make_shared<FrameTags>(secret, nonce_c, nonce_w, side);
  frames_.require_tags(kFrameTagBytes,
                       [tags = tags_](std::span<const std::byte> frame, std::span<const std::byte> tag) {
                         return tags->verify(frame, tag);
                       });
}

asio::awaitable<void> ControlSocket::authenticate_worker(const RunSecret& secret) {
  const Nonce nonce_c = random_nonce();
  const auto hello = handshake_hello(nonce_c);
  co_await asio::async_write(socket_, asio::buffer(hello), asio::use_awaitable);
  std::array<std::uint8_t, kHandshakeProofBytes> proof{};
  co_await asio::async_read(socket_, asio::buffer(proof), asio::use_awaitable);
  const Nonce nonce_w = check_handshake_proof(secret, nonce_c, proof);
  const auto answer = handshake_answer(secret, nonce_c, nonce_w);
  co_await asio::async_write(socket_, asio::buffer(answer), asio::use_awaitable);
  use_tags(secret, nonce_c, nonce_w, FrameTags::Side::coordinator);
}

namespace {

// Fills `out` from `fd` by `deadline`, or throws: a peer that never answers
// must not hold a worker (asio's blocking reads would wait forever).
void read_exactly(int fd, std::span<std::uint8_t> out, std::chrono::steady_clock::time_point deadline) {
  std::size_t got = 0;
  while (got < out.size()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) throw std::runtime_error("no answer to the handshake in time");
    pollfd ready{fd, POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(left));
    if (polled < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
    if (polled <= 0) continue;
    const ssize_t n = ::recv(fd, out.data() + got, out.size() - got, 0);
    if (n == 0) throw std::runtime_error("the coordinator closed the connection during the handshake");
    if (n < 0 && errno != EINTR && errno != EAGAIN)
      throw std::system_error(errno, std::generic_category(), "reading the handshake");
    if (n > 0) got += static_cast<std::size_t>(n);
  }
}

}  // namespace

void ControlSocket::authenticate_to_coordinator(const RunSecret& secret) {
  const auto deadline = std::chrono::steady_clock::now() + kHandshakeTimeout;
  const int fd = socket_.native_handle();
  std::array<std::uint8_t, kHandshakeHelloBytes> hello{};
  read_exactly(fd, hello, deadline);
  const Nonce nonce_c = read_handshake_hello(hello);
  const Nonce nonce_w = random_nonce();
  asio::write(socket_, asio::buffer(handshake_proof(secret, nonce_c, nonce_w)));
  std::array<std::uint8_t, kHandshakeAnswerBytes> answer{};
  read_exactly(fd, answer, deadline);
  check_handshake_answer(secret, nonce_c, nonce_w, answer);
  use_tags(secret, nonce_c, nonce_w, FrameTags::Side::worker);
}

std::string ControlAddress::to_string() const {
  if (!tcp()) return path;
  in_addr address{htonl(ipv4)};
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address, text, sizeof(text));
  return fmt::format("tcp:{}:{}", text, port);
}

ControlAddress parse_control_address(const std::string& text) {
  ControlAddress out;
  if (!text.starts_with("tcp:")) {
    if (text.empty()) throw std::invalid_argument("an empty control address");
    out.path = text;
    return out;
  }
  const std::string rest = text.substr(4);
  const auto colon = rest.rfind(':');
  in_addr address{};
  if (colon == std::string::npos || ::inet_pton(AF_INET, rest.substr(0, colon).c_str(), &address) != 1)
    throw std::invalid_argument(fmt::format("control address {}: expected tcp:IPV4:PORT", base::quoted(text)));
  try {
    out.port = base::parse_integer<std::uint16_t>(rest.substr(colon + 1), 1, 65535);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("control address {}: the port is not 1..65535", base::quoted(text)));
  }
  out.ipv4 = ntohl(address.s_addr);
  return out;
}

std::optional<RunSecret> run_secret_for(const std::string& control_address) {
  try {
    if (!parse_control_address(control_address).tcp()) return std::nullopt;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return take_run_secret();
}

namespace {

ControlSocket::Socket connect_once(asio::io_context& io, const ControlAddress& where, std::error_code& ec) {
  if (!where.tcp()) {
    asio::local::stream_protocol::socket socket(io);
    socket.connect(asio::local::stream_protocol::endpoint(where.path), ec);
    return ControlSocket::Socket(std::move(socket));
  }
  asio::ip::tcp::socket socket(io);
  socket.connect(asio::ip::tcp::endpoint(asio::ip::address_v4(where.ipv4), where.port), ec);
  if (!ec) socket.set_option(asio::ip::tcp::no_delay(true), ec);
  return ControlSocket::Socket(std::move(socket));
}

}  // namespace

std::shared_ptr<ControlSocket> connect_control(asio::io_context& io, const std::string& address,
                                               const std::optional<RunSecret>& secret) {
  ControlAddress where;
  try {
    where = parse_control_address(address);
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(error.what());
  }
  if (where.tcp() && !secret) throw std::runtime_error("a control channel over TCP needs the run's secret");
  std::error_code ec;
  std::optional<ControlSocket::Socket> socket;
  for (int attempt = 0; attempt < 50; ++attempt) {
    socket.emplace(connect_once(io, where, ec));
    if (!ec) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (ec) throw std::runtime_error("connecting to the coordinator at " + address + ": " + ec.message());
  auto control = std::make_shared<ControlSocket>(std::move(*socket));
  if (!secret) return control;
  try {
    control->authenticate_to_coordinator(*secret);
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("authenticating to the coordinator at {}: {}", address, error.what()));
  }
  return control;
}

}  // namespace wanlab::harness::run_detail
