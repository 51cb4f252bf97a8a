// Test helper for attacks on a transport server over real loopback TCP: a
// raw peer that speaks the wire format with blocking sockets (hellos, frames
// at any offset, slow bytes).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "unit/transport_support.hpp"
#include "wanlab/transport/wire.hpp"

namespace transport_attack {

namespace wire = wanlab::transport::wire;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// One TCP connection to 127.0.0.1:port with blocking I/O; every send gives
/// up after `patience` (the server may stop reading: that is its defence).
class RawPeer {
 public:
  explicit RawPeer(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect() to port " + std::to_string(port) + " failed");
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;
  ~RawPeer() { ::close(fd_); }

  /// True if all of `bytes` went into the socket within `patience`.
  bool send(std::span<const std::byte> bytes, std::chrono::milliseconds patience = 2s) {
    const auto deadline = Clock::now() + patience;
    while (!bytes.empty()) {
      pollfd entry{fd_, POLLOUT, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || ::poll(&entry, 1, static_cast<int>(left)) != 1) return false;
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return false;
      bytes = bytes.subspan(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Sends a hello and reads the reply (status ok expected; throws otherwise).
  wire::Hello handshake(std::uint64_t channel, std::uint16_t index, std::uint16_t count, std::uint32_t chunk_size) {
    const auto bytes = wire::encode(transport_test::valid_hello(channel, index, count, chunk_size));
    if (!send(bytes)) throw std::runtime_error("sending the hello timed out");
    wire::HelloBytes reply_bytes;
    if (!receive(reply_bytes, 5s)) throw std::runtime_error("no handshake reply");
    const auto reply = wire::decode_hello(reply_bytes);
    if (reply.status != wire::HelloStatus::ok) throw std::runtime_error("the handshake was refused");
    return reply;
  }

  /// A data frame whose payload is `length` bytes of 0x5A.
  bool send_chunk(std::uint64_t id, std::uint64_t size, std::uint64_t offset, std::uint32_t length,
                  std::chrono::milliseconds patience = 2s) {
    return send(transport_test::frame(transport_test::data(id, size, offset, length), length), patience);
  }

  /// True if the server closed or reset the connection within `wait` (data it sends is skipped).
  bool closed_by_peer(std::chrono::milliseconds wait) {
    const auto deadline = Clock::now() + wait;
    for (;;) {
      pollfd entry{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || ::poll(&entry, 1, static_cast<int>(left)) != 1) return false;
      std::byte sink[4096];
      const auto n = ::recv(fd_, sink, sizeof(sink), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    }
  }

 private:
  bool receive(std::span<std::byte> into, std::chrono::milliseconds wait) {
    const auto deadline = Clock::now() + wait;
    while (!into.empty()) {
      pollfd entry{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || ::poll(&entry, 1, static_cast<int>(left)) != 1) return false;
      const auto n = ::recv(fd_, into.data(), into.size(), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
      if (n > 0) into = into.subspan(static_cast<std::size_t>(n));
    }
    return true;
  }

  int fd_;
};

}  // namespace transport_attack
