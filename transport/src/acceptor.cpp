// Acceptor: collects the connections of each channel and answers their hellos.
#include <fmt/format.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/ip/v6_only.hpp>
#include <list>
#include <map>
#include <variant>

#include "channel_core.hpp"
#include "handshake.hpp"
#include "socket_setup.hpp"

namespace wanlab::transport::detail {

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
    for (auto& [id, group] : groups_) group.deadline->cancel();
    groups_.clear();
    for (auto& entry : incoming_) {
      entry->socket.close(ignored);
      entry->registered = false;
    }
    incoming_.clear();
    ready_event_.notify_all();
  }

 private:
  // A connection from its accept until its channel is complete (or it fails).
  struct Incoming {
    explicit Incoming(asio::ip::tcp::socket s) : socket(std::move(s)) {}
    asio::ip::tcp::socket socket;
    std::string from;
    Clock::time_point heard = Clock::now();  // accepted, or its last hello byte
    std::size_t hello_bytes = 0;
    std::optional<std::uint64_t> channel;  // waiting in this channel's group for the others
    bool shed = false;
    bool registered = false;
    std::list<std::shared_ptr<Incoming>>::iterator position;  // in incoming_, while registered
  };

  struct Group {
    wire::Hello first;                               // the first hello of the channel: the others must agree with it
    std::vector<std::shared_ptr<Incoming>> members;  // by index, once their reply is written
    std::vector<bool> reserved;                      // hello accepted for this index (its reply may be in flight)
    std::size_t arrived = 0;
    std::shared_ptr<asio::steady_timer> deadline;
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
      // A flood of connections that never complete a handshake must neither
      // exhaust fds nor lock out the next client: the idlest one makes room.
      if (incoming_.size() >= kMaxPendingConnections) shed_idlest();
      asio::co_spawn(executor_, handshake(enrol(std::move(socket))), asio::detached);
    }
  }

  std::shared_ptr<Incoming> enrol(asio::ip::tcp::socket socket) {
    auto entry = std::make_shared<Incoming>(std::move(socket));
    std::error_code ec;
    const auto peer = entry->socket.remote_endpoint(ec);
    entry->from = ec ? std::string("unknown peer") : to_string(peer);
    entry->position = incoming_.insert(incoming_.end(), entry);
    entry->registered = true;
    return entry;
  }

  void unenrol(Incoming& entry) {
    if (!entry.registered) return;
    incoming_.erase(entry.position);
    entry.registered = false;
  }

  // The connection heard from longest ago, preferring those still in their
  // hello (a complete hello is worth more than none): it is closed, and its
  // channel with it if it was waiting for the others.
  void shed_idlest() {
    std::shared_ptr<Incoming> victim;
    for (const auto& entry : incoming_) {
      const bool in_hello = !entry->channel;
      const bool victim_in_hello = victim && !victim->channel;
      if (!victim || (in_hello != victim_in_hello ? in_hello : entry->heard < victim->heard)) victim = entry;
    }
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - victim->heard);
    report(TransportError(
        Errc::handshake_refused,
        fmt::format("shed connection from {} to make room ({} connections were in their "
                    "handshake): it had sent {} of {} hello bytes, the last {} ms ago",
                    victim->from, incoming_.size(), victim->hello_bytes, wire::kHelloSize, silent.count())));
    victim->shed = true;
    if (victim->channel) {
      fail_group(*victim->channel);
      return;
    }
    std::error_code ignored;
    victim->socket.close(ignored);
    unenrol(*victim);
  }

  // Reads the hello, noting when each byte arrives (for shed_idlest).
  static asio::awaitable<wire::Hello> read_hello_from(Incoming& entry) {
    wire::HelloBytes bytes;
    while (entry.hello_bytes < bytes.size()) {
      entry.hello_bytes += co_await entry.socket.async_read_some(
          asio::buffer(bytes.data() + entry.hello_bytes, bytes.size() - entry.hello_bytes), asio::use_awaitable);
      entry.heard = Clock::now();
    }
    co_return wire::decode_hello(bytes);
  }

  asio::awaitable<void> handshake(std::shared_ptr<Incoming> entry) {
    auto self = shared_from_this();
    const auto& from = entry->from;
    try {
      apply_congestion_control(entry->socket.native_handle(), options_.socket);
      apply_connection_options(entry->socket.native_handle(), options_);
      wire::Hello hello;
      {
        Watchdog watchdog(executor_, options_.handshake_timeout, [entry] {
          std::error_code ignored;
          entry->socket.close(ignored);
        });
        std::error_code read_error;
        try {
          hello = co_await read_hello_from(*entry);
        } catch (const std::system_error& e) {
          read_error = e.code();
        }
        if (watchdog.fired()) {
          throw TransportError(Errc::timed_out, fmt::format("connection from {}: no hello within {} ms ({} of {} "
                                                            "bytes arrived)",
                                                            from, options_.handshake_timeout.count(),
                                                            entry->hello_bytes, wire::kHelloSize));
        }
        if (read_error) {
          throw TransportError(Errc::connection_failed,
                               fmt::format("connection from {}: reading the hello: {}", from, read_error.message()));
        }
      }
      co_await admit(entry, hello);
    } catch (const TransportError& e) {
      if (!entry->shed) report(e);  // shed_idlest() reported it
    } catch (const std::system_error& e) {
      if (!entry->shed) {
        report(
            TransportError(Errc::connection_failed, fmt::format("connection from {}: {}", from, e.code().message())));
      }
    }
    if (!entry->channel) unenrol(*entry);  // a group member leaves with its group
  }

  // Checks a hello against the rules and its channel's other connections;
  // answers it; completes the channel when its last connection arrives.
  asio::awaitable<void> admit(std::shared_ptr<Incoming> entry, const wire::Hello& hello) {
    if (closed_ || entry->shed) co_return;  // unenrolled, then closed with `entry`
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
        co_await write_reply(entry->socket, reply, verdict.reason);
      } catch (const std::system_error&) {
        // The refusal is best effort; the error below is what matters.
      }
      throw TransportError(Errc::handshake_refused,
                           fmt::format("refused connection from {}: {}", entry->from, verdict.reason));
    }
    auto group = groups_.find(id);
    if (group == groups_.end()) group = open_group(hello);
    // Reserve the index before the reply, so a duplicate arriving meanwhile is refused.
    group->second.reserved[hello.index] = true;
    co_await write_reply(entry->socket, reply, "");
    group = groups_.find(id);
    if (closed_ || group == groups_.end()) co_return;  // closed, failed or timed out meanwhile
    if (entry->shed) {
      fail_group(id);  // it cannot complete without this connection
      co_return;
    }
    entry->channel = id;
    group->second.members[hello.index] = entry;
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
    group.members.resize(hello.count);
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
    auto group = std::move(it->second);
    groups_.erase(it);
    group.deadline->cancel();
    for (const auto& member : group.members) {
      if (!member) continue;
      std::error_code ignored;
      member->socket.close(ignored);
      unenrol(*member);
    }
  }

  void complete_group(std::uint64_t id) {
    auto it = groups_.find(id);
    auto group = std::move(it->second);
    groups_.erase(it);
    group.deadline->cancel();
    ChannelSetup setup;
    setup.executor = executor_;
    for (const auto& member : group.members) {
      setup.sockets.push_back(std::move(member->socket));
      unenrol(*member);
    }
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
  std::list<std::shared_ptr<Incoming>> incoming_;  // accepted, channel not yet complete
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
