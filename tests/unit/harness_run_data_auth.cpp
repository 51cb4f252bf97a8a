// The workers' data channels across machines: a worker admits a channel only
// from a worker of the run that proves it holds the run's secret. A stranger
// that connects first and names the expected peer is dropped, and the real
// peer is then admitted. Real channels over loopback TCP.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <exception>
#include <optional>
#include <span>
#include <string>

#include "protocol/control_auth.hpp"
#include "protocol/control_socket.hpp"
#include "protocol/data_header.hpp"
#include "protocol/notifier.hpp"
#include "worker/data_channels.hpp"
#include "worker/worker_layout.hpp"

namespace ctl = wanlab::harness::control;
namespace rd = wanlab::harness::run_detail;

namespace {

constexpr std::uint32_t kLoopback = 0x7f000001;

// Ports for this process's channels: apart from other test runs at once.
std::uint16_t base_port() { return static_cast<std::uint16_t>(30000 + (::getpid() % 1000) * 20); }

// Worker `id` of a two-worker run: 0 sends to 1 over one intra-DC channel.
ctl::Assign assign_of(int id, std::uint16_t port0) {
  ctl::Assign assign;
  assign.plan.worker.id = id;
  wanlab::harness::Op op;
  op.kind = id == 0 ? wanlab::harness::OpKind::send : wanlab::harness::OpKind::recv;
  op.peer = 1 - id;
  op.bytes = 1024;
  assign.plan.ops = {op};
  assign.ipv4 = kLoopback;
  assign.intra_dc = {static_cast<std::uint16_t>(port0 + id), 65536, 65536};
  assign.cross_dc = {static_cast<std::uint16_t>(port0 + 10 + id), 65536, 65536};
  assign.peers = {{1 - id, kLoopback, static_cast<std::uint16_t>(port0 + 1 - id), false, 0}};
  assign.iterations = 1;
  return assign;
}

// One worker's data side on the shared io_context; a failure it throws is kept.
struct Side {
  ctl::Assign assign;
  rd::WorkerLayout layout;
  rd::Notifier changed;
  std::string failure;
  bool over = false;
  rd::DataChannels data;

  Side(asio::io_context& io, int id, std::uint16_t port0, const rd::RunSecret& secret)
      : assign(assign_of(id, port0)),
        layout(assign, id),
        data(
            io, id, changed, [&io, this](asio::awaitable<void> work) { spawn(io, std::move(work)); },
            [this] { return over; }) {
    data.authenticate_with(secret);
    data.assign(assign, layout);
  }

  void spawn(asio::io_context& io, asio::awaitable<void> work) {
    asio::co_spawn(io, std::move(work), [this](std::exception_ptr error) {
      if (!error) return;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        failure = e.what();
      }
    });
  }
};

rd::RunSecret secret_of(char fill) {
  rd::RunSecret secret;
  secret.key.fill(static_cast<std::uint8_t>(fill));
  return secret;
}

// Runs `io` until `done` or 20 s.
template <typename Done>
void run_until(asio::io_context& io, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < deadline) io.run_for(std::chrono::milliseconds(20));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_stranger_naming_a_peer_is_dropped_and_the_peer_admitted) {
  asio::io_context io;
  const std::uint16_t port0 = base_port();
  Side receiver(io, 1, port0, secret_of('r'));
  receiver.data.listen();
  const auto deadline = rd::Clock::now() + std::chrono::seconds(20);
  receiver.spawn(io, receiver.data.open(deadline));

  // The stranger names worker 0 and answers the challenge with another secret.
  Side stranger(io, 0, port0, secret_of('x'));
  bool stranger_done = false;
  asio::co_spawn(io, stranger.data.open(deadline), [&](std::exception_ptr error) {
    stranger_done = true;
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      stranger.failure = e.what();
    }
  });
  run_until(io, [&] { return stranger_done; });
  io.run_for(std::chrono::milliseconds(300));  // the receiver checks the proof
  BOOST_TEST(!receiver.data.all_open(), "the stranger's channel was admitted");
  BOOST_TEST(receiver.failure == "", "the receiver failed: " << receiver.failure);

  // The real worker 0 then connects, and its channel is admitted.
  Side sender(io, 0, port0, secret_of('r'));
  sender.spawn(io, sender.data.open(deadline));
  run_until(io, [&] { return receiver.data.all_open() && sender.data.all_open(); });
  BOOST_TEST(receiver.data.all_open());
  BOOST_TEST(sender.data.all_open());
  BOOST_TEST(receiver.failure == "");
  BOOST_TEST(sender.failure == "");
  receiver.over = sender.over = stranger.over = true;
  receiver.data.close();
  sender.data.close();
  stranger.data.close();
  io.run_for(std::chrono::milliseconds(100));
}

// A stranger that names the expected peer and then stays silent holds only
// its own connection, and only until the handshake's deadline (20 s): the
// receiver closes it and goes on.
BOOST_AUTO_TEST_CASE(a_silent_stranger_is_closed_at_the_handshakes_deadline) {
  asio::io_context io;
  const std::uint16_t port0 = static_cast<std::uint16_t>(base_port() + 2);  // within this process's 20 ports
  Side receiver(io, 1, port0, secret_of('r'));
  receiver.data.listen();
  // Its opening gives up 3 s after the stranger's deadline: no real peer comes.
  const auto deadline = rd::Clock::now() + rd::kHandshakeTimeout + std::chrono::seconds(3);
  receiver.spawn(io, receiver.data.open(deadline));

  std::optional<wanlab::transport::Channel> silent;
  bool challenged = false, closed = false;
  const auto since = std::chrono::steady_clock::now();
  // Named: the coroutine refers to the lambda's captures after this statement.
  const auto stranger = [&]() -> asio::awaitable<void> {
    wanlab::transport::ChannelOptions options;
    options.idle_timeout = std::chrono::milliseconds(0);
    silent.emplace(co_await wanlab::transport::Channel::connect(io.get_executor(), "127.0.0.1",
                                                                static_cast<std::uint16_t>(port0 + 1), options));
    const auto identity = rd::encode_identity(0);
    co_await silent->send_borrowed(std::span<const std::byte>(identity)).wait();
    challenged = (co_await silent->receive()).has_value();  // the nonce, left unanswered
    try {
      closed = !(co_await silent->receive()).has_value();
    } catch (const std::exception&) {
      closed = true;
    }
  };
  asio::co_spawn(io, stranger(), asio::detached);
  const auto limit = std::chrono::steady_clock::now() + rd::kHandshakeTimeout + std::chrono::seconds(10);
  while (!closed && std::chrono::steady_clock::now() < limit) io.run_for(std::chrono::milliseconds(20));
  BOOST_TEST(challenged);
  BOOST_TEST(closed, "the silent stranger's channel is still open");
  const auto after = std::chrono::steady_clock::now() - since;
  BOOST_TEST((after >= rd::kHandshakeTimeout - std::chrono::seconds(1)), std::chrono::duration<double>(after).count());
  BOOST_TEST(receiver.failure == "", "the receiver failed: " << receiver.failure);
  if (silent) silent->close();
  // The opening ends at its own deadline, for want of the real peer only.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (receiver.failure.empty() && std::chrono::steady_clock::now() < end) io.run_for(std::chrono::milliseconds(20));
  BOOST_TEST(receiver.failure.find("peers' channels open") != std::string::npos, receiver.failure);
  receiver.over = true;
  receiver.data.close();
  io.run_for(std::chrono::milliseconds(100));
}
