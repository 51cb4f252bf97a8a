// BubbleTea's KV channels across machines: the decode sink (the real one,
// decode_sink_main, on its own thread, its control channel over TCP with the
// run's secret) admits a KV channel only from a prefill worker that proves it
// holds the secret for itself and this sink. A stranger naming a worker, a
// proof made with another secret, for another sink or for a workers' data
// channel is refused, and the sink goes on: the real worker's cache then
// arrives, and the sink tells the coordinator (here, this test). One that
// names a worker and stays silent is closed at the handshake's deadline
// (20 s). Real channels over loopback TCP.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/use_future.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "protocol/control_auth.hpp"
#include "protocol/control_socket.hpp"
#include "protocol/data_header.hpp"
#include "wanlab/harness/run/control.hpp"
#include "wanlab/harness/run/run.hpp"
#include "wanlab/transport/channel.hpp"

namespace ctl = wanlab::harness::control;
namespace rd = wanlab::harness::run_detail;
namespace tp = wanlab::transport;

namespace {

constexpr std::uint32_t kLoopback = 0x7f000001;
constexpr int kSink = 0;
constexpr int kWorker = 3;

// A port the kernel had free just now (bound and let go): the sink's.
std::uint16_t sink_port() {
  static const std::uint16_t port = [] {
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io, asio::ip::tcp::endpoint(asio::ip::address_v4(kLoopback), 0));
    return probe.local_endpoint().port();
  }();
  return port;
}

rd::RunSecret secret_of(char fill) {
  rd::RunSecret secret;
  secret.key.fill(static_cast<std::uint8_t>(fill));
  return secret;
}

// Runs `work` on `io` until it ends, for at most `limit`.
template <typename T>
T run(asio::io_context& io, asio::awaitable<T> work, std::chrono::seconds limit = std::chrono::seconds(20)) {
  auto result = asio::co_spawn(io, std::move(work), asio::use_future);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
         std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
  BOOST_TEST_REQUIRE((result.wait_for(std::chrono::seconds(0)) == std::future_status::ready), "timed out");
  return result.get();
}

// A KV channel to the sink that names `worker` and answers the sink's nonce
// with `prove(nonce)`; whether the sink kept it open after the proof (it
// closes a refused one: the next receive ends).
using Prover = std::function<std::vector<std::byte>(const rd::Nonce&)>;

asio::awaitable<std::optional<tp::Channel>> offer(int worker, Prover prove) {
  tp::ChannelOptions options;
  options.max_message_size = 64;
  options.idle_timeout = std::chrono::milliseconds(0);
  options.connect_timeout = std::chrono::seconds(5);
  auto executor = co_await asio::this_coro::executor;
  tp::Channel channel = co_await tp::Channel::connect(executor, "127.0.0.1", sink_port(), options);
  const auto identity = rd::encode_identity(worker);
  co_await channel.send_borrowed(std::span<const std::byte>(identity)).wait();
  auto challenge = co_await channel.receive();
  if (!challenge || challenge->bytes().size() != sizeof(rd::Nonce)) co_return std::nullopt;
  rd::Nonce nonce{};
  std::memcpy(nonce.data(), challenge->bytes().data(), nonce.size());
  const std::vector<std::byte> proof = prove(nonce);
  co_await channel.send_borrowed(std::span<const std::byte>(proof)).wait();
  co_return std::move(channel);
}

// A KV channel to the sink that names `worker`, takes the sink's nonce and answers nothing.
asio::awaitable<std::optional<tp::Channel>> open_silently(int worker) {
  tp::ChannelOptions options;
  options.max_message_size = 64;
  options.idle_timeout = std::chrono::milliseconds(0);
  auto executor = co_await asio::this_coro::executor;
  tp::Channel channel = co_await tp::Channel::connect(executor, "127.0.0.1", sink_port(), options);
  const auto identity = rd::encode_identity(worker);
  co_await channel.send_borrowed(std::span<const std::byte>(identity)).wait();
  auto challenge = co_await channel.receive();  // the nonce, left unanswered
  if (!challenge) co_return std::nullopt;
  co_return std::move(channel);
}

// Whether the sink closed `channel` (a refused one): its next receive ends.
asio::awaitable<bool> closed_by_sink(tp::Channel& channel) {
  try {
    auto message = co_await channel.receive();
    co_return !message.has_value();
  } catch (const std::exception&) {
    co_return true;
  }
}

// One KV piece: its header and `size` zeros.
std::vector<std::byte> piece(const rd::KvHeader& header, std::size_t size) {
  const auto head = rd::encode_kv_header(header);
  std::vector<std::byte> out(head.begin(), head.end());
  out.resize(head.size() + size, std::byte{0});
  return out;
}

asio::awaitable<void> send(tp::Channel& channel, std::vector<std::byte> message) {
  co_await channel.send_borrowed(std::span<const std::byte>(message)).wait();
}

template <std::size_t N>
std::vector<std::byte> bytes(const std::array<std::uint8_t, N>& key) {
  const auto span = std::as_bytes(std::span(key));
  return {span.begin(), span.end()};
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_sink_admits_a_kv_channel_only_on_the_runs_proof) {
  const rd::RunSecret secret = secret_of('s');
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::endpoint(asio::ip::address_v4(kLoopback), 0));
  const std::string address = "tcp:127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  ::setenv(rd::kRunSecretVariable, secret.hex().c_str(), 1);
  std::promise<int> sink_exit;
  auto sink_code = sink_exit.get_future();
  std::shared_ptr<rd::ControlSocket> control;
  // However the test ends, the sink's control connection closes, which ends the sink.
  struct Joined {
    std::thread thread;
    std::shared_ptr<rd::ControlSocket>& control;
    ~Joined() {
      if (control) control->close();
      thread.join();
    }
  } sink{std::thread([&] { sink_exit.set_value(wanlab::harness::decode_sink_main(address, kSink)); }), control};

  // The coordinator's side: the sink's hello, its assignment, "listening".
  control = run(io, [&]() -> asio::awaitable<std::shared_ptr<rd::ControlSocket>> {
    auto socket = co_await acceptor.async_accept(asio::use_awaitable);
    auto control = std::make_shared<rd::ControlSocket>(rd::ControlSocket::Socket(std::move(socket)));
    co_await control->authenticate_worker(secret);
    co_return control;
  }());
  const auto next = [&] { return run(io, control->read()); };
  const auto hello = next();
  BOOST_TEST_REQUIRE(hello.has_value());
  BOOST_TEST_REQUIRE(std::holds_alternative<ctl::SinkHello>(*hello));
  ctl::SinkAssign assign;
  assign.ipv4 = kLoopback;
  assign.port = sink_port();
  assign.chunk_size = tp::kDefaultChunkSize;
  assign.max_message_bytes = 1 << 20;
  assign.senders = 1;
  control->post(assign);
  const auto listening = next();
  BOOST_TEST_REQUIRE(listening.has_value());
  BOOST_TEST_REQUIRE(std::holds_alternative<ctl::Listening>(*listening));

  // A stranger that names the worker and then stays silent holds only
  // itself, and only until the handshake's deadline.
  const auto silent_since = std::chrono::steady_clock::now();
  auto silent = run(io, open_silently(kWorker));
  BOOST_TEST_REQUIRE(silent.has_value(), "the sink sent the silent stranger no challenge");

  // Refused: each is closed by the sink, which goes on.
  const std::vector<std::pair<std::string, Prover>> refused{
      {"no proof", [](const rd::Nonce&) { return std::vector<std::byte>(32, std::byte{0}); }},
      {"another run's secret",
       [](const rd::Nonce& nonce) { return bytes(rd::kv_channel_proof(secret_of('x'), nonce, kWorker, kSink)); }},
      {"a proof for another sink",
       [&](const rd::Nonce& nonce) { return bytes(rd::kv_channel_proof(secret, nonce, kWorker, kSink + 1)); }},
      {"a workers' data channel proof",
       [&](const rd::Nonce& nonce) { return bytes(rd::data_channel_proof(secret, nonce, kWorker, kSink)); }},
  };
  for (const auto& [what, prove] : refused) {
    BOOST_TEST_INFO(what);
    auto channel = run(io, offer(kWorker, prove));
    BOOST_TEST_REQUIRE(channel.has_value());
    BOOST_TEST(run(io, closed_by_sink(*channel)));
    channel->close();
  }

  // The real prefill worker: its cache's one piece arrives, and the sink says so.
  auto channel = run(io, offer(kWorker, [&](const rd::Nonce& nonce) {
                       return bytes(rd::kv_channel_proof(secret, nonce, kWorker, kSink));
                     }));
  BOOST_TEST_REQUIRE(channel.has_value());
  run(io, send(*channel, piece(rd::KvHeader{kWorker, 7, 0, 1, 0}, 1000)));
  const auto arrived = next();
  BOOST_TEST_REQUIRE(arrived.has_value());
  const auto* kv = std::get_if<ctl::KvArrived>(&*arrived);
  BOOST_TEST_REQUIRE(kv != nullptr, ctl::type_name(*arrived));
  BOOST_TEST(kv->batch == 7);
  BOOST_TEST(kv->worker == kWorker);
  BOOST_TEST(kv->bytes == 1000u);

  // The silent stranger's channel was closed at the deadline.
  BOOST_TEST(run(io, closed_by_sink(*silent), rd::kHandshakeTimeout + std::chrono::seconds(10)));
  const auto silent_for = std::chrono::steady_clock::now() - silent_since;
  BOOST_TEST((silent_for >= rd::kHandshakeTimeout - std::chrono::seconds(1)),
             std::chrono::duration<double>(silent_for).count() << " s");
  silent->close();

  control->post(ctl::Stop{});
  io.restart();
  io.run_for(std::chrono::milliseconds(200));  // writes the stop
  BOOST_TEST_REQUIRE((sink_code.wait_for(std::chrono::seconds(10)) == std::future_status::ready));
  BOOST_TEST(sink_code.get() == 0);
  channel->close();
}
