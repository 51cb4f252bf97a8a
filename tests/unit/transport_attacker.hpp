// Test helpers for attacks on a transport server over real loopback TCP: a
// raw peer that speaks the wire format with blocking sockets (hellos, frames
// at any offset, slow bytes), and a real `wanlab perf server` child process
// (path from $WANLAB_BIN, set by CTest) whose memory is read from /proc.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"
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

using wanlab::test::wanlab_bin;

struct Memory {
  std::uint64_t rss = 0;   ///< VmRSS, bytes
  std::uint64_t peak = 0;  ///< VmHWM, bytes
};

/// `wanlab perf server --bind 127.0.0.1 --port 0 ARGS...`, stopped (SIGTERM)
/// when destroyed. Its output is drained all along, so it never blocks on it.
class PerfServerProcess {
 public:
  explicit PerfServerProcess(const std::vector<std::string>& args) {
    std::vector<std::string> argv{wanlab_bin(), "perf", "server", "--bind", "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = wanlab::test::start(argv);
    reader_ = std::thread([this] { drain(); });
    const std::regex listening("listening on 127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = Clock::now() + 10s;
    while (port_ == 0 && Clock::now() < deadline) {
      std::smatch match;
      const auto text = output();
      if (std::regex_search(text, match, listening)) port_ = static_cast<std::uint16_t>(std::stoi(match[1]));
      std::this_thread::sleep_for(20ms);
    }
    if (port_ == 0) {
      stop();
      throw std::runtime_error("the perf server did not start: " + output());
    }
  }
  PerfServerProcess(const PerfServerProcess&) = delete;
  PerfServerProcess& operator=(const PerfServerProcess&) = delete;
  ~PerfServerProcess() { stop(); }

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return process_.child.pid(); }
  bool running() const { return pid() > 0 && ::kill(pid(), 0) == 0; }

  Memory memory() const {
    std::ifstream status("/proc/" + std::to_string(pid()) + "/status");
    Memory memory;
    std::string key;
    std::uint64_t kib = 0;
    while (status >> key) {
      if (key == "VmRSS:" && status >> kib) memory.rss = kib << 10;
      if (key == "VmHWM:" && status >> kib) memory.peak = kib << 10;
    }
    return memory;
  }

  std::string output() const {
    std::lock_guard lock(mutex_);
    return output_;
  }

 private:
  void drain() {
    char buffer[4096];
    for (;;) {
      const auto n = ::read(process_.output.get(), buffer, sizeof(buffer));
      if (n <= 0) return;
      std::lock_guard lock(mutex_);
      output_.append(buffer, static_cast<std::size_t>(n));
    }
  }

  // SIGTERM, up to 5 s to go, then SIGKILL (base::Child's drop).
  void stop() {
    if (process_.child.pid() > 0) {
      ::kill(pid(), SIGTERM);
      for (int i = 0; i < 100 && !process_.child.try_wait(); ++i) std::this_thread::sleep_for(50ms);
      process_.child = wanlab::base::Child();
    }
    if (reader_.joinable()) reader_.join();
    process_.output.reset();
  }

  wanlab::test::Started process_;
  std::uint16_t port_ = 0;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::string output_;
};

struct CommandResult {
  int status = -1;  ///< exit status; 128 + signal; -1 if it had to be killed after the limit
  std::string output;
};

/// Runs `wanlab ARGS...` to its end (killed after `limit`).
inline CommandResult run_wanlab(const std::vector<std::string>& args, std::chrono::seconds limit = 60s) {
  std::vector<std::string> argv{wanlab_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  wanlab::test::Started process = wanlab::test::start(argv);
  CommandResult result;
  std::thread reader([&] { result.output = wanlab::test::read_to_eof(process.output.get()); });
  std::optional<int> status;
  const auto deadline = Clock::now() + limit;
  while (!(status = process.child.try_wait()) && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  if (!status) process.child = wanlab::base::Child();  // killed and reaped: past the limit
  reader.join();
  result.status = status.value_or(-1);
  return result;
}

}  // namespace transport_attack
