// The control channel across machines: both ends prove they hold the run's
// secret, and every frame after that carries a tag. A peer without the
// secret is refused; a frame changed, replayed or out of order fails the
// connection with a ControlError. Real sockets (a socket pair), real
// OpenSSL; the machines-wide test is tests/multihost/slurm.cpp.
#include <boost/test/unit_test.hpp>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/local/connect_pair.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/use_future.hpp>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include "protocol/control_auth.hpp"
#include "protocol/control_socket.hpp"

namespace ctl = wanlab::harness::control;
namespace rd = wanlab::harness::run_detail;

namespace {

struct Pair {
  asio::io_context io;
  std::shared_ptr<rd::ControlSocket> coordinator;
  std::shared_ptr<rd::ControlSocket> worker;
  int worker_fd = -1;
  int coordinator_fd = -1;

  Pair() {
    asio::local::stream_protocol::socket a(io), b(io);
    asio::local::connect_pair(a, b);
    coordinator_fd = a.native_handle();
    worker_fd = b.native_handle();
    coordinator = std::make_shared<rd::ControlSocket>(rd::ControlSocket::Socket(std::move(a)));
    worker = std::make_shared<rd::ControlSocket>(rd::ControlSocket::Socket(std::move(b)));
  }

  // Runs both sides of the handshake; returns {coordinator's error, worker's error} ("" when it passed).
  std::pair<std::string, std::string> handshake(const rd::RunSecret& coordinator_secret,
                                                const rd::RunSecret& worker_secret) {
    std::string worker_error;
    std::thread worker_side([&] {
      try {
        worker->authenticate_to_coordinator(worker_secret);
      } catch (const std::exception& error) {
        worker_error = error.what();
      }
    });
    auto done = asio::co_spawn(io, coordinator->authenticate_worker(coordinator_secret), asio::use_future);
    io.run();
    io.restart();
    std::string coordinator_error;
    try {
      done.get();
    } catch (const std::exception& error) {
      coordinator_error = error.what();
      coordinator->close();  // as the coordinator does: the worker's wait then ends
    }
    worker_side.join();
    return {coordinator_error, worker_error};
  }

  // The next message `socket` reads, or the error reading it.
  std::string read_on(const std::shared_ptr<rd::ControlSocket>& socket) {
    auto next = asio::co_spawn(io, socket->read(), asio::use_future);
    io.run();
    io.restart();
    try {
      auto message = next.get();
      return message ? ctl::type_name(*message) : "end";
    } catch (const ctl::ControlError& error) {
      return std::string("error: ") + error.what();
    }
  }
};

rd::RunSecret secret_of(char fill) {
  rd::RunSecret secret;
  secret.key.fill(static_cast<std::uint8_t>(fill));
  return secret;
}

}  // namespace

BOOST_AUTO_TEST_CASE(both_ends_with_the_secret_talk_with_tagged_frames) {
  Pair pair;
  const auto [coordinator_error, worker_error] = pair.handshake(secret_of('a'), secret_of('a'));
  BOOST_TEST(coordinator_error == "");
  BOOST_TEST(worker_error == "");
  pair.worker->send_now(ctl::Hello{3, 77});
  BOOST_TEST(pair.read_on(pair.coordinator) == "hello");
  pair.coordinator->send_now(ctl::ClockProbe{0, 123});
  pair.coordinator->send_now(ctl::Start{0});
  BOOST_TEST(pair.read_on(pair.worker) == "clock_probe");
  BOOST_TEST(pair.read_on(pair.worker) == "start");
}

BOOST_AUTO_TEST_CASE(a_peer_without_the_secret_is_refused_both_ways) {
  {
    Pair pair;  // a stranger dials the coordinator
    const auto [coordinator_error, worker_error] = pair.handshake(secret_of('a'), secret_of('b'));
    BOOST_TEST(coordinator_error.find("does not know the run's secret") != std::string::npos, coordinator_error);
    BOOST_TEST(worker_error != "");
  }
  {
    // A false coordinator: it answers with a proof of another secret. The worker refuses it.
    Pair pair;
    std::string worker_error;
    std::thread worker_side([&] {
      try {
        pair.worker->authenticate_to_coordinator(secret_of('a'));
      } catch (const std::exception& error) {
        worker_error = error.what();
      }
    });
    const rd::Nonce nonce_c = rd::random_nonce();
    const auto hello = rd::handshake_hello(nonce_c);
    BOOST_REQUIRE(::write(pair.coordinator_fd, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()));
    std::array<std::uint8_t, rd::kHandshakeProofBytes> proof{};
    BOOST_REQUIRE(::read(pair.coordinator_fd, proof.data(), proof.size()) == static_cast<ssize_t>(proof.size()));
    rd::Nonce nonce_w{};
    std::memcpy(nonce_w.data(), proof.data(), nonce_w.size());
    const auto answer = rd::handshake_answer(secret_of('z'), nonce_c, nonce_w);
    BOOST_REQUIRE(::write(pair.coordinator_fd, answer.data(), answer.size()) == static_cast<ssize_t>(answer.size()));
    worker_side.join();
    BOOST_TEST(worker_error.find("the coordinator does not know the run's secret") != std::string::npos, worker_error);
  }
}

BOOST_AUTO_TEST_CASE(a_changed_or_replayed_frame_fails_the_connection) {
  const rd::RunSecret secret = secret_of('s');
  const rd::Nonce nonce_c = rd::random_nonce(), nonce_w = rd::random_nonce();
  rd::FrameTags worker(secret, nonce_c, nonce_w, rd::FrameTags::Side::worker);
  const auto frame = ctl::encode(ctl::Hello{1, 2});
  const auto tag = worker.sign(frame);

  {
    rd::FrameTags coordinator(secret, nonce_c, nonce_w, rd::FrameTags::Side::coordinator);
    BOOST_TEST(coordinator.verify(frame, tag));
    BOOST_TEST(!coordinator.verify(frame, tag));  // the same frame again: a replay
  }
  {
    rd::FrameTags coordinator(secret, nonce_c, nonce_w, rd::FrameTags::Side::coordinator);
    auto changed = frame;
    changed.back() ^= std::byte{1};
    BOOST_TEST(!coordinator.verify(changed, tag));
  }
  {
    // A frame of another connection (other nonces) does not pass here.
    rd::FrameTags other(secret, rd::random_nonce(), nonce_w, rd::FrameTags::Side::coordinator);
    BOOST_TEST(!other.verify(frame, tag));
  }
  {
    // The coordinator's own frame sent back to it (a reflection) does not pass.
    rd::FrameTags coordinator(secret, nonce_c, nonce_w, rd::FrameTags::Side::coordinator);
    const auto own = coordinator.sign(frame);
    BOOST_TEST(!coordinator.verify(frame, own));
  }

  // Through the sockets: a frame injected without the right tag is a ControlError naming the tag.
  Pair pair;
  const auto [coordinator_error, worker_error] = pair.handshake(secret, secret);
  BOOST_REQUIRE(coordinator_error == "");
  BOOST_REQUIRE(worker_error == "");
  auto forged = ctl::encode(ctl::Hello{0, 1});
  forged.insert(forged.end(), rd::kFrameTagBytes, std::byte{0});
  BOOST_REQUIRE(::write(pair.worker_fd, forged.data(), forged.size()) == static_cast<ssize_t>(forged.size()));
  const std::string read = pair.read_on(pair.coordinator);
  BOOST_TEST(read.find("error: frame 1: its authentication tag does not match") == 0u, read);
}

BOOST_AUTO_TEST_CASE(the_secret_comes_from_the_environment_once) {
  const rd::RunSecret made = rd::RunSecret::generate();
  BOOST_TEST(made.hex().size() == 64u);
  BOOST_TEST(made.hex() != rd::RunSecret::generate().hex());
  ::setenv(rd::kRunSecretVariable, made.hex().c_str(), 1);
  BOOST_TEST(rd::take_run_secret().hex() == made.hex());
  BOOST_TEST(std::getenv(rd::kRunSecretVariable) == nullptr);  // what the worker starts does not inherit it
  BOOST_CHECK_THROW(rd::take_run_secret(), std::runtime_error);
  ::setenv(rd::kRunSecretVariable, "abc", 1);
  try {
    rd::take_run_secret();
    BOOST_FAIL("a short secret was taken");
  } catch (const std::runtime_error& error) {
    BOOST_TEST(std::string(error.what()).find("expected 64 hex digits, got 3") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(control_addresses) {
  const auto tcp = rd::parse_control_address("tcp:10.99.0.1:40123");
  BOOST_TEST(tcp.tcp());
  BOOST_TEST(tcp.ipv4 == 0x0a630001u);
  BOOST_TEST(tcp.port == 40123);
  BOOST_TEST(tcp.to_string() == "tcp:10.99.0.1:40123");
  BOOST_TEST(rd::parse_control_address("/run/wanlab/x/control.sock").path == "/run/wanlab/x/control.sock");
  for (const char* bad : {"tcp:10.99.0.1", "tcp:host:1", "tcp:10.0.0.1:0", "tcp:10.0.0.1:70000", "tcp:10.0.0.1:x", ""})
    BOOST_CHECK_THROW(rd::parse_control_address(bad), std::invalid_argument);
}

// The proofs are HMAC-SHA256 as the docs say: a value computed elsewhere
// (Python's hmac) over "wanlab data" | nonce | from | to.
BOOST_AUTO_TEST_CASE(proofs_are_hmac_sha256) {
  rd::Nonce nonce{};
  for (std::size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<std::uint8_t>(i);
  const rd::AuthKey proof = rd::data_channel_proof(secret_of('k'), nonce, 3, 5);
  rd::RunSecret as_hex;
  as_hex.key = proof;
  BOOST_TEST(as_hex.hex() == "1a452197a4dff3778a69ad259fd60619f28d56354e2ed612b3fe13feda185d2f");
  BOOST_TEST(rd::check_data_channel_proof(secret_of('k'), nonce, 3, 5, std::as_bytes(std::span(proof))));
  BOOST_TEST(!rd::check_data_channel_proof(secret_of('k'), nonce, 5, 3, std::as_bytes(std::span(proof))));
}
