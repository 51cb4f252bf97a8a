// Channel::connect: N TCP connections, each with its hello and the server's reply.
#include <fmt/format.h>

#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/write.hpp>
#include <random>

#include "channel_core.hpp"
#include "handshake.hpp"
#include "socket_setup.hpp"

namespace wanlab::transport::detail {
namespace {

std::uint64_t random_channel_id() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

class ConnectAttempt : public std::enable_shared_from_this<ConnectAttempt> {
 public:
  ConnectAttempt(asio::any_io_executor executor, std::string host, std::uint16_t port, ChannelOptions options)
      : executor_(executor),
        host_(std::move(host)),
        port_(port),
        options_(std::move(options)),
        resolver_(executor),
        replies_(options_.connections),
        done_(executor),
        channel_id_(random_channel_id()) {
    for (unsigned i = 0; i < options_.connections; ++i) sockets_.emplace_back(executor);
  }

  // Static, holding `self`: the coroutine starts only when awaited.
  static asio::awaitable<Channel> run(std::shared_ptr<ConnectAttempt> self) { return self->run_impl(self); }

 private:
  asio::awaitable<Channel> run_impl(std::shared_ptr<ConnectAttempt> self) {
    Watchdog watchdog(executor_, options_.connect_timeout, [this, self] {
      if (error_) return;
      timed_out_ = true;
      resolver_.cancel();
      abort_all();
    });
    co_await resolve();
    remaining_ = options_.connections;
    for (unsigned i = 0; i < options_.connections; ++i) {
      asio::co_spawn(executor_, connect_one(i), [self](std::exception_ptr e) { self->finished_one(e); });
    }
    while (remaining_ > 0) co_await done_.wait();
    watchdog.disarm();
    if (timed_out_) throw timeout_error();
    if (error_) throw *error_;
    co_return ChannelCore::make_handle(ChannelCore::start(setup()));
  }

  std::string target() const { return fmt::format("{}:{}", host_, port_); }
  std::string where(unsigned index) const {
    return fmt::format("connection {} of {} to {}", index, options_.connections, target());
  }

  TransportError timeout_error() const {
    std::size_t ready = 0;
    for (const auto& reply : replies_) ready += reply.has_value() ? 1 : 0;
    return TransportError(Errc::timed_out,
                          fmt::format("connecting to {}: timed out after {} ms ({} of {} connections "
                                      "ready)",
                                      target(), options_.connect_timeout.count(), ready, options_.connections));
  }

  asio::awaitable<void> resolve() {
    std::error_code ec;
    endpoints_ =
        co_await resolver_.async_resolve(host_, std::to_string(port_), asio::redirect_error(asio::use_awaitable, ec));
    if (timed_out_) throw timeout_error();
    if (ec) throw TransportError(Errc::connection_failed, fmt::format("resolving '{}': {}", host_, ec.message()));
    if (endpoints_.empty()) {
      throw TransportError(Errc::connection_failed, fmt::format("resolving '{}': no addresses", host_));
    }
  }

  asio::awaitable<void> connect_one(unsigned index) {
    auto self = shared_from_this();
    auto& socket = sockets_[index];
    const char* doing = "connecting";
    try {
      co_await connect_socket(index);
      apply_connection_options(socket.native_handle(), options_);
      doing = "sending the hello";
      const auto hello = wire::encode(make_hello(options_, channel_id_, static_cast<std::uint16_t>(index),
                                                 static_cast<std::uint16_t>(options_.connections)));
      co_await asio::async_write(socket, asio::buffer(hello), asio::use_awaitable);
      doing = "reading the handshake reply";
      const auto reply = co_await read_hello(socket);
      co_await check_reply(index, reply);
      replies_[index] = reply;
    } catch (const TransportError&) {
      throw;
    } catch (const std::system_error& e) {
      throw TransportError(Errc::connection_failed, fmt::format("{}: {}: {}", where(index), doing, e.code().message()));
    }
  }

  // Tries each resolved address in turn, like asio::async_connect, but sets
  // the buffer sizes between open() and connect().
  asio::awaitable<void> connect_socket(unsigned index) {
    auto& socket = sockets_[index];
    std::string failures;
    for (const auto& entry : endpoints_) {
      if (aborted_) break;
      std::error_code ec;
      socket.close(ec);
      socket.open(entry.endpoint().protocol(), ec);
      if (!ec) {
        apply_before_connect(socket.native_handle(), options_.socket);
        if (!options_.local_address.empty()) bind_local(socket, entry.endpoint().protocol(), ec);
      }
      if (!ec) co_await socket.async_connect(entry.endpoint(), asio::redirect_error(asio::use_awaitable, ec));
      if (!ec) co_return;
      // Name the address only when the host resolved to several.
      failures += endpoints_.size() == 1 ? ec.message()
                                         : fmt::format("{}{}: {}", failures.empty() ? "" : "; ",
                                                       to_string(entry.endpoint()), ec.message());
    }
    throw TransportError(Errc::connection_failed, fmt::format("{}: {}", where(index), aborted_ ? "aborted" : failures));
  }

  void bind_local(asio::ip::tcp::socket& socket, const asio::ip::tcp& protocol, std::error_code& ec) {
    const auto address = asio::ip::make_address(options_.local_address, ec);
    if (ec) {
      throw TransportError(Errc::invalid_argument,
                           fmt::format("local address '{}': {}", options_.local_address, ec.message()));
    }
    if (address.is_v6() != (protocol == asio::ip::tcp::v6())) {
      ec = asio::error::address_family_not_supported;
      return;
    }
    socket.bind({address, 0}, ec);
  }

  asio::awaitable<void> check_reply(unsigned index, const wire::Hello& reply) {
    if (reply.magic != wire::kHelloMagic) {
      throw TransportError(Errc::handshake_refused,
                           fmt::format("{}: the server answered with bad magic 0x{:08x}: not a wanlab transport "
                                       "server",
                                       where(index), reply.magic));
    }
    if (reply.status != wire::HelloStatus::ok) {
      auto reason = co_await read_reason(sockets_[index], reply.reason_length);
      if (reason.empty()) reason = wire::to_string(reply.status);
      throw TransportError(Errc::handshake_refused,
                           fmt::format("{}: the server refused the handshake: {}", where(index), reason));
    }
    if (const auto verdict = wire::check(reply, false); !verdict.ok()) {
      throw TransportError(Errc::handshake_refused,
                           fmt::format("{}: bad handshake reply: {}", where(index), verdict.reason));
    }
    if (reply.channel_id != channel_id_ || reply.index != index || reply.count != options_.connections) {
      throw TransportError(Errc::protocol_error,
                           fmt::format("{}: the reply is for channel {:016x} connection {} of {}, not ours",
                                       where(index), reply.channel_id, reply.index, reply.count));
    }
  }

  void finished_one(std::exception_ptr failure) {
    --remaining_;
    done_.notify_all();
    if (!failure || aborted_) return;
    try {
      std::rethrow_exception(failure);
    } catch (const TransportError& e) {
      error_ = e;
    } catch (const std::exception& e) {
      error_ = TransportError(Errc::connection_failed, e.what());
    }
    abort_all();
  }

  void abort_all() {
    aborted_ = true;
    for (auto& socket : sockets_) {
      std::error_code ignored;
      socket.close(ignored);
    }
  }

  ChannelSetup setup() {
    const auto& first = *replies_.front();
    for (const auto& reply : replies_) {
      if (reply->chunk_size != first.chunk_size || reply->max_message_size != first.max_message_size) {
        throw TransportError(Errc::protocol_error,
                             fmt::format("connecting to {}: the server's replies disagree on chunk size or message "
                                         "limit",
                                         target()));
      }
    }
    ChannelSetup setup;
    setup.executor = executor_;
    setup.sockets = std::move(sockets_);
    setup.options = options_;
    setup.budget = budget_for(options_);
    setup.id = channel_id_;
    setup.peer_chunk_size = first.chunk_size;
    setup.peer_max_message_size = first.max_message_size;
    return setup;
  }

  asio::any_io_executor executor_;
  std::string host_;
  std::uint16_t port_;
  ChannelOptions options_;
  asio::ip::tcp::resolver resolver_;
  asio::ip::tcp::resolver::results_type endpoints_;
  std::vector<asio::ip::tcp::socket> sockets_;
  std::vector<std::optional<wire::Hello>> replies_;
  AsyncEvent done_;
  std::uint64_t channel_id_;
  unsigned remaining_ = 0;
  bool aborted_ = false;
  bool timed_out_ = false;
  std::optional<TransportError> error_;
};

}  // namespace
}  // namespace wanlab::transport::detail

namespace wanlab::transport {

// Not a coroutine itself: GCC 12 mishandles class-type default arguments of
// coroutines (the default ChannelOptions would be freed twice).
asio::awaitable<Channel> Channel::connect(asio::any_io_executor executor, std::string host, std::uint16_t port,
                                          ChannelOptions options) {
  validate(options);
  return detail::ConnectAttempt::run(
      std::make_shared<detail::ConnectAttempt>(executor, std::move(host), port, std::move(options)));
}

}  // namespace wanlab::transport
