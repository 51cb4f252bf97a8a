// Helpers shared by the transport unit tests: running a coroutine on a test
// io_context with a time limit, deterministic payloads, and a loopback TCP
// proxy that can stall or reset single connections of a channel.
#pragma once

// GCC 12 takes larger coroutine frames (a test's coroutine that spawns
// another) for memory freed by a mismatched operator delete: it sees Asio's
// aligned_alloc but not the free() behind the frame's class operator delete
// (GCC bug 109224, a false positive). For every test that includes this.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "wanlab/transport/channel.hpp"
#include "wanlab/transport/wire.hpp"

namespace transport_test {

using namespace std::chrono_literals;
using asio::ip::tcp;
namespace wt = wanlab::transport;

/// Runs `task` on `io` until it completes; fails the test after `limit`.
inline void run(asio::io_context& io, asio::awaitable<void> task, std::chrono::steady_clock::duration limit = 30s) {
  bool done = false;
  std::exception_ptr error;
  asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) {
    done = true;
    error = e;
  });
  const auto deadline = std::chrono::steady_clock::now() + limit;
  io.restart();
  while (!done) {
    if (std::chrono::steady_clock::now() > deadline) BOOST_FAIL("the test's coroutine did not finish in time");
    io.run_one_for(50ms);
    if (io.stopped()) io.restart();
  }
  if (error) std::rethrow_exception(error);
}

template <typename T>
T run(asio::io_context& io, asio::awaitable<T> task, std::chrono::steady_clock::duration limit = 30s) {
  std::optional<T> result;
  run(
      io,
      [](asio::awaitable<T> inner, std::optional<T>& out) -> asio::awaitable<void> {
        out.emplace(co_await std::move(inner));
      }(std::move(task), result),
      limit);
  return std::move(*result);
}

/// Lets the io_context run other handlers for `duration` (inside a coroutine).
inline asio::awaitable<void> sleep(std::chrono::steady_clock::duration duration) {
  asio::steady_timer timer(co_await asio::this_coro::executor, duration);
  co_await timer.async_wait(asio::use_awaitable);
}

/// Deterministic pseudo-random bytes (splitmix64 of seed and position).
inline void fill_pattern(std::span<std::byte> bytes, std::uint64_t seed) {
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < bytes.size(); i += 8) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (std::size_t j = 0; j < 8 && i + j < bytes.size(); ++j) bytes[i + j] = static_cast<std::byte>(z >> (8 * j));
  }
}

inline wt::Message make_message(std::size_t size, std::uint64_t seed) {
  wt::Message message(size);
  fill_pattern(message.bytes(), seed);
  return message;
}

/// 64-bit FNV-1a over 8-byte words (position-sensitive, independent of the library's CRC32C).
inline std::uint64_t hash_of(std::span<const std::byte> bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ bytes.size();
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word = 0;
    for (int j = 0; j < 8; ++j) word |= std::to_integer<std::uint64_t>(bytes[i + j]) << (8 * j);
    h = (h ^ word) * 0x100000001b3ull;
  }
  for (; i < bytes.size(); ++i) h = (h ^ std::to_integer<std::uint64_t>(bytes[i])) * 0x100000001b3ull;
  return h;
}

inline wt::ChannelOptions small_options(unsigned connections, std::uint32_t chunk_size = 64 * 1024) {
  wt::ChannelOptions options;
  options.connections = connections;
  options.chunk_size = chunk_size;
  options.connect_timeout = 5s;
  options.handshake_timeout = 5s;
  return options;
}

inline tcp::endpoint loopback() { return {asio::ip::make_address("127.0.0.1"), 0}; }

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Receives until the channel ends or fails; returns the failure (empty if it ended cleanly).
inline asio::awaitable<std::string> receive_until_failure(wt::Channel& channel) {
  try {
    while (co_await channel.receive()) {
    }
  } catch (const wt::TransportError& e) {
    co_return std::string(e.what());
  }
  co_return std::string();
}

/// The error of the next accept() ("(accepted)" if a channel came instead).
inline asio::awaitable<std::string> accept_error(wt::Acceptor& acceptor) {
  try {
    co_await acceptor.accept();
  } catch (const wt::TransportError& e) {
    co_return std::string(e.what());
  }
  co_return std::string("(accepted)");
}

/// Polls `condition` every 5 ms; fails the test after `limit`.
inline asio::awaitable<void> wait_until(std::function<bool()> condition, std::chrono::steady_clock::duration limit,
                                        const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) BOOST_FAIL(std::string("timed out waiting for: ") + what);
    co_await sleep(5ms);
  }
}

// ---- wire format, as a peer writes it -------------------------------------

/// The hello a client sends on connection `index` of `count`.
inline wt::wire::Hello valid_hello(std::uint64_t id, std::uint16_t index, std::uint16_t count,
                                   std::uint32_t chunk_size = 4096) {
  wt::wire::Hello hello;
  hello.channel_id = id;
  hello.index = index;
  hello.count = count;
  hello.chunk_size = chunk_size;
  hello.max_message_size = 1 << 20;
  return hello;
}

/// A data frame's header.
inline wt::wire::ChunkHeader data(std::uint64_t id, std::uint64_t size, std::uint64_t offset, std::uint32_t length) {
  wt::wire::ChunkHeader h;
  h.message_id = id;
  h.message_size = size;
  h.offset = offset;
  h.length = length;
  return h;
}

/// `header` followed by `payload_bytes` bytes of `fill`.
inline std::vector<std::byte> frame(const wt::wire::ChunkHeader& header, std::size_t payload_bytes,
                                    std::byte fill = std::byte{0x5A}) {
  const auto head = wt::wire::encode(header);
  std::vector<std::byte> out(head.begin(), head.end());
  out.insert(out.end(), payload_bytes, fill);
  return out;
}

/// A TCP proxy on loopback: each accepted connection is forwarded to `target`
/// over a fresh connection. Knows each pair's channel connection index (read
/// from the hello it forwards), and can stop forwarding one direction of a
/// pair (a stalled path: TCP flow control backs up into the sender) or reset
/// both sides (RST, like a middlebox killing the flow).
class Proxy : public std::enable_shared_from_this<Proxy> {
 public:
  struct Pair {
    tcp::socket client;
    tcp::socket server;
    int index = -1;
    bool client_to_server_paused = false;
    std::uint64_t client_to_server_bytes = 0;
    std::unique_ptr<asio::steady_timer> resume;  // wakes a paused pump
    explicit Pair(asio::any_io_executor ex)
        : client(ex), server(ex), resume(std::make_unique<asio::steady_timer>(ex)) {}
  };

  Proxy(asio::any_io_executor ex, tcp::endpoint target) : executor_(ex), acceptor_(ex, loopback()), target_(target) {}

  void start() { asio::co_spawn(executor_, accept_loop(), asio::detached); }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  Pair* pair(int index) {
    for (auto& p : pairs_) {
      if (p->index == index) return p.get();
    }
    return nullptr;
  }
  void pause(int index) { pair(index)->client_to_server_paused = true; }
  void resume(int index) {
    pair(index)->client_to_server_paused = false;
    pair(index)->resume->cancel();
  }
  /// RST on both sides of connection `index`.
  void reset(int index) {
    auto* p = pair(index);
    for (auto* socket : {&p->client, &p->server}) {
      std::error_code ignored;
      socket->set_option(asio::socket_base::linger(true, 0), ignored);
      socket->close(ignored);
    }
  }
  std::size_t pairs() const { return pairs_.size(); }
  void close() {
    std::error_code ignored;
    acceptor_.close(ignored);
    for (auto& p : pairs_) {
      p->client.close(ignored);
      p->server.close(ignored);
    }
  }

 private:
  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    for (;;) {
      std::error_code ec;
      auto pair = std::make_unique<Pair>(executor_);
      co_await acceptor_.async_accept(pair->client, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      co_await pair->server.async_connect(target_, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      // Forward the hello ourselves to learn the connection index.
      wt::wire::HelloBytes hello;
      co_await asio::async_read(pair->client, asio::buffer(hello), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      pair->index = wt::wire::decode_hello(hello).index;
      co_await asio::async_write(pair->server, asio::buffer(hello), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      Pair& p = *pair;
      pairs_.push_back(std::move(pair));
      asio::co_spawn(executor_, pump(p, p.client, p.server, true), asio::detached);
      asio::co_spawn(executor_, pump(p, p.server, p.client, false), asio::detached);
    }
  }

  asio::awaitable<void> pump(Pair& p, tcp::socket& from, tcp::socket& to, bool client_to_server) {
    auto self = shared_from_this();
    std::vector<std::byte> buffer(256 * 1024);
    for (;;) {
      while (client_to_server && p.client_to_server_paused) {
        std::error_code ignored;
        p.resume->expires_after(std::chrono::hours(1));
        co_await p.resume->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      }
      std::error_code ec;
      const auto n = co_await from.async_read_some(asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        to.shutdown(tcp::socket::shutdown_send, ec);
        co_return;
      }
      co_await asio::async_write(to, asio::buffer(buffer.data(), n), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      if (client_to_server) p.client_to_server_bytes += n;
    }
  }

  asio::any_io_executor executor_;
  tcp::acceptor acceptor_;
  tcp::endpoint target_;
  std::vector<std::unique_ptr<Pair>> pairs_;
};

}  // namespace transport_test
