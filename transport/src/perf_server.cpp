// The server side of `wanlab perf`.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <asio/co_spawn.hpp>
#include <algorithm>
#include <cmath>
#include <asio/detached.hpp>
#include <ostream>

#include "handshake.hpp"
#include "perf_protocol.hpp"
#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/channel.hpp"
#include "wanlab/transport/perf.hpp"

namespace wanlab::transport::perf {
namespace {

using Clock = std::chrono::steady_clock;

struct SessionResult {
  std::string remote;
  unsigned streams = 0;
  Summary summary;
  std::vector<std::uint64_t> per_stream_bytes;
};

// The remote's address goes through the JSON writer, which escapes it.
std::string json_line(const SessionResult& r) {
  const double goodput = r.summary.seconds > 0 ? 8.0 * static_cast<double>(r.summary.bytes) / r.summary.seconds : 0;
  const nlohmann::ordered_json json = {{"remote", r.remote},
                                       {"streams", r.streams},
                                       {"bytes", r.summary.bytes},
                                       {"messages", r.summary.messages},
                                       {"seconds", std::round(r.summary.seconds * 1e6) / 1e6},
                                       {"goodput_bps", std::llround(goodput)},
                                       {"per_stream_bytes", r.per_stream_bytes}};
  return json.dump();
}

std::string text_line(const SessionResult& r) {
  const double goodput = r.summary.seconds > 0 ? 8.0 * static_cast<double>(r.summary.bytes) / r.summary.seconds : 0;
  return fmt::format("{} ({} stream{}): received {:.1f} MBytes in {} messages over {:.2f} s = {:.1f} Mbit/s", r.remote,
                     r.streams, r.streams == 1 ? "" : "s", static_cast<double>(r.summary.bytes) / 1e6,
                     r.summary.messages, r.summary.seconds, goodput / 1e6);
}

}  // namespace

struct Server::State : std::enable_shared_from_this<Server::State> {
  State(asio::any_io_executor ex, ServerOptions o, std::ostream& output, std::ostream& errors, Acceptor a)
      : executor(ex), options(std::move(o)), out(output), err(errors), acceptor(std::move(a)) {}

  asio::any_io_executor executor;
  ServerOptions options;
  std::ostream& out;
  std::ostream& err;
  Acceptor acceptor;
  bool stopped = false;

  asio::awaitable<bool> session(Channel channel) {
    auto self = shared_from_this();
    const auto remote = detail::to_string(channel.remote_endpoint());
    try {
      auto request = co_await channel.receive();
      const std::string_view text(request ? reinterpret_cast<const char*>(request->data()) : "",
                                  request ? request->size() : 0);
      if (text != kRequest) {
        throw TransportError(Errc::protocol_error, "the first message is not a wanlab perf request");
      }
      SessionResult result{remote, channel.connection_count(), {}, {}};
      const auto start = Clock::now();
      auto last = start;
      while (auto message = co_await channel.receive()) {
        last = Clock::now();
        channel.send(encode_ack(result.summary.messages));
        result.summary.bytes += message->size();
        ++result.summary.messages;
      }
      result.summary.seconds = std::chrono::duration<double>(last - start).count();
      for (const auto& c : channel.stats().connections) result.per_stream_bytes.push_back(c.bytes_received);
      channel.send(encode_summary(result.summary));
      co_await channel.shutdown();
      out << (options.json ? json_line(result) : text_line(result)) << std::endl;
      co_return true;
    } catch (const TransportError& e) {
      err << "wanlab perf server: client " << remote << ": " << e.what() << std::endl;
      co_return false;
    }
  }

  asio::awaitable<bool> serve() {
    auto self = shared_from_this();
    if (!options.json)
      out << "wanlab perf server listening on " << detail::to_string(acceptor.local_endpoint()) << std::endl;
    for (;;) {
      std::optional<Channel> channel;
      try {
        channel.emplace(co_await acceptor.accept());
      } catch (const TransportError& e) {
        if (stopped) co_return true;
        err << "wanlab perf server: " << e.what() << std::endl;
        if (options.one_off) co_return false;
        continue;
      }
      if (options.one_off) co_return co_await session(std::move(*channel));
      asio::co_spawn(executor, session(std::move(*channel)), asio::detached);
    }
  }
};

Server Server::listen(asio::any_io_executor executor, const ServerOptions& options, std::ostream& out,
                      std::ostream& err) {
  auto channel = options.channel;
  const auto budget = channel.shared_memory_budget ? channel.shared_memory_budget->limit() : channel.memory_budget;
  channel.max_message_size = std::min(channel.max_message_size, MemoryBudget::largest_message(budget / 2));
  auto make = [&](const std::string& address) {
    std::error_code ec;
    const auto parsed = asio::ip::make_address(address, ec);
    if (ec) throw TransportError(Errc::invalid_argument, fmt::format("bind address '{}': {}", address, ec.message()));
    return Acceptor::listen(executor, {parsed, options.port}, channel);
  };
  std::optional<Acceptor> acceptor;
  if (!options.bind.empty()) {
    acceptor.emplace(make(options.bind));
  } else {
    try {
      acceptor.emplace(make("::"));  // dual-stack
    } catch (const TransportError&) {
      acceptor.emplace(make("0.0.0.0"));  // no IPv6 here (e.g. a namespace without it)
    }
  }
  return Server(std::make_shared<State>(executor, options, out, err, std::move(*acceptor)));
}

asio::ip::tcp::endpoint Server::local_endpoint() const { return state_->acceptor.local_endpoint(); }

asio::awaitable<bool> Server::serve() { return state_->serve(); }

void Server::stop() {
  state_->stopped = true;
  state_->acceptor.close();
}

}  // namespace wanlab::transport::perf
