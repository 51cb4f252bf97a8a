// Acceptor: collects the connections of each channel and answers their hellos.
#include <fmt/format.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/ip/v6_only.hpp>
#include <map>
#include <variant>

#include "channel_core.hpp"
#include "handshake.hpp"
#include "socket_setup.hpp"

namespace wanlab::transport::detail {
namespace {
// A flood of connections that never complete a handshake must not exhaust fds.
constexpr std::size_t kMaxHandshakesInProgress = 256;
}  // namespace

class AcceptorCore : public std::enable_shared_from_this<AcceptorCore> {
 public:
  AcceptorCore(asio::any_io_executor executor, const asio::ip::tcp::endpoint& endpoint, ChannelOptions options)
      : executor_(executor), acceptor_(executor), options_(std::move(options)), ready_event_(executor) {
    validate(options_);
    budget_ = budget_for(options_);
    std::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && endpoint.address().is_v6()) acceptor_.set_option(asio::ip::v6_only(false), ec);
    if (!ec) apply_before_connect(acceptor_.native_handle(), options_.socket);  // inherited by accepted sockets
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw TransportError(Errc::connection_failed,
                           fmt::format("listening on {}: {}", to_string(endpoint), ec.message()));
    }
  }

  void start() { asio::co_spawn(executor_, accept_loop(), asio::detached); }

  asio::awaitable<Channel> accept() {
    auto self = shared_from_this();
    for (;;) {
      if (!ready_.empty()) {
        auto next = std::move(ready_.front());
        ready_.pop_front();
        if (auto* error = std::get_if<TransportError>(&next)) throw *error;
        co_return ChannelCore::make_handle(std::get<std::shared_ptr<ChannelCore>>(std::move(next)));
      }
      if (closed_) throw TransportError(Errc::closed, "the acceptor is closed");
      co_await ready_event_.wait();
    }
  }

  asio::ip::tcp::endpoint local_endpoint() const {
    std::error_code ignored;
    return acceptor_.local_endpoint(ignored);
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    std::error_code ignored;
    acceptor_.close(ignored);
    for (auto& [id, group] : groups_) group.close();
    groups_.clear();
    ready_event_.notify_all();
  }

 private:
  struct Group {
    wire::Hello first;  // the first hello of the channel: the others must agree with it
    std::vector<std::optional<asio::ip::tcp::socket>> sockets;
    std::vector<bool> reserved;  // hello accepted for this index (its reply may be in flight)
    std::size_t arrived = 0;
    std::shared_ptr<asio::steady_timer> deadline;
    void close() {
      for (auto& socket : sockets) {
        std::error_code ignored;
        if (socket) socket->close(ignored);
      }
      if (deadline) deadline->cancel();
    }
  };

  void report(TransportError error) {
    ready_.emplace_back(std::move(error));
    ready_event_.notify_all();
  }

  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    while (!closed_) {
      std::error_code ec;
      auto socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (closed_) co_return;
      if (ec) {
        report(TransportError(Errc::connection_failed, fmt::format("accepting: {}", ec.message())));
        asio::steady_timer pause(executor_, std::chrono::milliseconds(100));  // e.g. EMFILE: don't spin
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      if (handshakes_ >= kMaxHandshakesInProgress) continue;  // dropping `socket` closes it
      ++handshakes_;
      asio::co_spawn(executor_, handshake(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> handshake(asio::ip::tcp::socket socket) {
    auto self = shared_from_this();
    std::error_code ec;
    const auto peer = socket.remote_endpoint(ec);
    const auto from = ec ? std::string("unknown peer") : to_string(peer);
    try {
      apply_congestion_control(socket.native_handle(), options_.socket);
      apply_connection_options(socket.native_handle(), options_);
      wire::Hello hello;
      {
        Watchdog watchdog(executor_, options_.handshake_timeout, [&socket] {
          std::error_code ignored;
          socket.close(ignored);
        });
        std::error_code read_error;
        try {
          hello = co_await read_hello(socket);
        } catch (const std::system_error& e) {
          read_error = e.code();
        }
        if (watchdog.fired()) {
          throw TransportError(Errc::timed_out, fmt::format("connection from {}: no hello within {} ms", from,
                                                            options_.handshake_timeout.count()));
        }
        if (read_error) {
          throw TransportError(Errc::connection_failed,
                               fmt::format("connection from {}: reading the hello: {}", from, read_error.message()));
        }
      }
      co_await admit(std::move(socket), hello, from);
    } catch (const TransportError& e) {
      report(e);
    } catch (const std::system_error& e) {
      report(TransportError(Errc::connection_failed, fmt::format("connection from {}: {}", from, e.code().message())));
    }
    --handshakes_;
  }

  // Checks a hello against the rules and its channel's other connections;
  // answers it; completes the channel when its last connection arrives.
  asio::awaitable<void> admit(asio::ip::tcp::socket socket, const wire::Hello& hello, const std::string& from) {
    if (closed_) co_return;  // dropping `socket` closes it
    const auto id = hello.channel_id;
    auto verdict = wire::check(hello, true);
    if (verdict.ok()) {
      if (auto group = groups_.find(id); group != groups_.end()) verdict = check_against_group(group->second, hello);
    }
    auto reply = make_hello(options_, id, hello.index, hello.count);
    if (!verdict.ok()) {
      const bool breaks_group =
          verdict.status == wire::HelloStatus::group_mismatch || verdict.status == wire::HelloStatus::duplicate_index;
      if (breaks_group) fail_group(id);
      reply.status = verdict.status;
      try {
        co_await write_reply(socket, reply, verdict.reason);
      } catch (const std::system_error&) {
        // The refusal is best effort; the error below is what matters.
      }
      throw TransportError(Errc::handshake_refused,
                           fmt::format("refused connection from {}: {}", from, verdict.reason));
    }
    auto group = groups_.find(id);
    if (group == groups_.end()) group = open_group(hello);
    // Reserve the index before the reply, so a duplicate arriving meanwhile is refused.
    group->second.reserved[hello.index] = true;
    co_await write_reply(socket, reply, "");
    group = groups_.find(id);
    if (closed_ || group == groups_.end()) co_return;  // closed, failed or timed out meanwhile
    group->second.sockets[hello.index].emplace(std::move(socket));
    if (++group->second.arrived == hello.count) complete_group(id);
  }

  wire::HelloVerdict check_against_group(const Group& group, const wire::Hello& hello) const {
    const auto& first = group.first;
    if (hello.count != first.count || hello.chunk_size != first.chunk_size ||
        hello.max_message_size != first.max_message_size) {
      return {wire::HelloStatus::group_mismatch,
              fmt::format("channel {:016x}: connection {} says {} connections, chunk size {}, message limit {}; "
                          "connection {} said {}, {}, {}",
                          hello.channel_id, hello.index, hello.count, hello.chunk_size, hello.max_message_size,
                          first.index, first.count, first.chunk_size, first.max_message_size)};
    }
    if (group.reserved[hello.index]) {
      return {wire::HelloStatus::duplicate_index,
              fmt::format("channel {:016x}: connection index {} arrived twice", hello.channel_id, hello.index)};
    }
    return {};
  }

  std::map<std::uint64_t, Group>::iterator open_group(const wire::Hello& hello) {
    Group group;
    group.first = hello;
    group.sockets.resize(hello.count);
    group.reserved.assign(hello.count, false);
    group.deadline = std::make_shared<asio::steady_timer>(executor_, options_.handshake_timeout);
    const auto id = hello.channel_id;
    group.deadline->async_wait([weak = weak_from_this(), id](std::error_code ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->group_timed_out(id);
    });
    return groups_.emplace(id, std::move(group)).first;
  }

  void group_timed_out(std::uint64_t id) {
    auto it = groups_.find(id);
    if (it == groups_.end()) return;
    const auto arrived = it->second.arrived;
    const auto count = it->second.first.count;
    fail_group(id);
    report(
        TransportError(Errc::timed_out, fmt::format("channel {:016x}: only {} of {} connections arrived within {} ms",
                                                    id, arrived, count, options_.handshake_timeout.count())));
  }

  void fail_group(std::uint64_t id) {
    auto it = groups_.find(id);
    if (it == groups_.end()) return;
    it->second.close();
    groups_.erase(it);
  }

  void complete_group(std::uint64_t id) {
    auto it = groups_.find(id);
    auto group = std::move(it->second);
    groups_.erase(it);
    group.deadline->cancel();
    ChannelSetup setup;
    setup.executor = executor_;
    for (auto& socket : group.sockets) setup.sockets.push_back(std::move(*socket));
    setup.options = options_;
    setup.budget = budget_;
    setup.id = id;
    setup.peer_chunk_size = group.first.chunk_size;
    setup.peer_max_message_size = group.first.max_message_size;
    ready_.emplace_back(ChannelCore::start(std::move(setup)));
    ready_event_.notify_all();
  }

  asio::any_io_executor executor_;
  asio::ip::tcp::acceptor acceptor_;
  ChannelOptions options_;
  std::deque<std::variant<std::shared_ptr<ChannelCore>, TransportError>> ready_;
  AsyncEvent ready_event_;
  std::shared_ptr<MemoryBudget> budget_;  // shared by every channel accepted here
  std::map<std::uint64_t, Group> groups_;
  std::size_t handshakes_ = 0;
  bool closed_ = false;
};

}  // namespace wanlab::transport::detail

namespace wanlab::transport {

Acceptor::Acceptor(std::shared_ptr<detail::AcceptorCore> core) : core_(std::move(core)) {}
Acceptor::Acceptor(Acceptor&&) noexcept = default;
Acceptor& Acceptor::operator=(Acceptor&& other) noexcept {
  if (this != &other) {
    if (core_) core_->close();
    core_ = std::move(other.core_);
  }
  return *this;
}
Acceptor::~Acceptor() {
  if (core_) core_->close();
}

Acceptor Acceptor::listen(asio::any_io_executor executor, const asio::ip::tcp::endpoint& endpoint,
                          ChannelOptions options) {
  auto core = std::make_shared<detail::AcceptorCore>(executor, endpoint, std::move(options));
  core->start();
  return Acceptor(std::move(core));
}

asio::awaitable<Channel> Acceptor::accept() { return core_->accept(); }
asio::ip::tcp::endpoint Acceptor::local_endpoint() const { return core_->local_endpoint(); }
void Acceptor::close() { core_->close(); }

}  // namespace wanlab::transport
