// Channel failure paths over loopback: a stalled connection, a reset
// connection, a peer that vanishes, a silent peer, refused handshakes and
// malformed frames from a raw peer. Each must end in a clear error (or, for
// the stall, in delivery through the other connections), never in a hang.
#include <boost/test/unit_test.hpp>
#include <random>

#include "unit/transport_support.hpp"
#include "wanlab/transport/crc32c.hpp"

using namespace transport_test;
using wt::Channel;
namespace wire = wt::wire;

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

BOOST_AUTO_TEST_CASE(stalled_connection_does_not_stop_the_others) {
  asio::io_context io;
  run(
      io,
      []() -> asio::awaitable<void> {
        auto executor = co_await asio::this_coro::executor;
        const wt::ChannelOptions server_options = small_options(1);
        auto acceptor = wt::Acceptor::listen(executor, loopback(), server_options);
        auto proxy = std::make_shared<Proxy>(executor, acceptor.local_endpoint());
        proxy->start();
        const auto client_options = small_options(4, 64 * 1024);
        auto client = co_await Channel::connect(executor, "127.0.0.1", proxy->port(), client_options);
        auto server = co_await acceptor.accept();
        BOOST_REQUIRE_EQUAL(proxy->pairs(), 4u);

        proxy->pause(0);  // connection 0's path stops forwarding: its window closes
        constexpr std::size_t kMessages = 96;
        constexpr std::size_t kSize = 1 << 20;
        std::vector<std::uint64_t> hashes;
        for (std::size_t i = 0; i < kMessages; ++i) {
          auto message = make_message(kSize, 500 + i);
          hashes.push_back(hash_of(message.bytes()));
          client.send(std::move(message));
        }
        auto forwarded_by_others = [&] {
          std::uint64_t total = 0;
          for (int i = 1; i < 4; ++i) total += proxy->pair(i)->client_to_server_bytes;
          return total;
        };
        // With round-robin the sender would block once connection 0's buffers are
        // full (a few MiB in all); pulling lets the other three carry the rest.
        co_await wait_until([&] { return forwarded_by_others() >= 85ull << 20; }, 20s,
                            "85 MiB through connections 1-3 while connection 0 is stalled");
        const auto stats = client.stats();
        BOOST_TEST_MESSAGE("while stalled: connection 0 took " << stats.connections[0].bytes_sent << " bytes, "
                                                               << stats.connections[0].stalls << " stalls");
        BOOST_CHECK_LE(stats.connections[0].bytes_sent, 6ull << 20);
        BOOST_CHECK_GE(stats.connections[0].stalls, 1u);
        // The proxy's pump may have had one read in progress when paused.
        BOOST_CHECK_LE(proxy->pair(0)->client_to_server_bytes, 256u * 1024);

        proxy->resume(0);
        for (std::size_t i = 0; i < kMessages; ++i) {
          auto received = co_await server.receive();
          BOOST_REQUIRE(received);
          BOOST_REQUIRE_EQUAL(received->size(), kSize);
          BOOST_REQUIRE_MESSAGE(hash_of(received->bytes()) == hashes[i], "message " << i << " content differs");
        }
        co_await client.flush();
        proxy->close();
      }(),
      60s);
}

BOOST_AUTO_TEST_CASE(reset_connection_fails_both_sides_promptly) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto executor = co_await asio::this_coro::executor;
    const wt::ChannelOptions server_options = small_options(1);
    auto acceptor = wt::Acceptor::listen(executor, loopback(), server_options);
    auto proxy = std::make_shared<Proxy>(executor, acceptor.local_endpoint());
    proxy->start();
    const auto client_options = small_options(4, 64 * 1024);
    auto client = co_await Channel::connect(executor, "127.0.0.1", proxy->port(), client_options);
    auto server = co_await acceptor.accept();

    // Keep data flowing, then kill connection 2 in the middle of it.
    std::vector<wt::SendTicket> tickets;
    for (int i = 0; i < 64; ++i) tickets.push_back(client.send(make_message(1 << 20, i)));
    auto first = co_await server.receive();
    BOOST_REQUIRE(first);
    const auto killed_at = Clock::now();
    proxy->reset(2);

    const auto server_error = co_await receive_until_failure(server);
    const auto server_took = Clock::now() - killed_at;
    std::string client_error;
    try {
      for (auto& ticket : tickets) co_await ticket.wait();
      co_await client.receive();
    } catch (const wt::TransportError& e) {
      client_error = e.what();
    }
    const auto client_took = Clock::now() - killed_at;
    BOOST_TEST_MESSAGE("server: " << server_error << "\nclient: " << client_error);
    BOOST_CHECK_MESSAGE(contains(server_error, "connection 2 of 4"), server_error);
    BOOST_CHECK_MESSAGE(contains(client_error, "connection 2 of 4"), client_error);
    BOOST_CHECK(!client.is_open());
    BOOST_CHECK(!server.is_open());
    BOOST_CHECK_LT(std::chrono::duration<double>(server_took).count(), 2.0);
    BOOST_CHECK_LT(std::chrono::duration<double>(client_took).count(), 2.0);
    proxy->close();
  }());
}

BOOST_AUTO_TEST_CASE(peer_that_vanishes_without_goodbye_fails_the_channel) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto executor = co_await asio::this_coro::executor;
    const wt::ChannelOptions server_options = small_options(1);
    auto acceptor = wt::Acceptor::listen(executor, loopback(), server_options);
    const auto client_options = small_options(3);
    auto client = co_await Channel::connect(executor, "127.0.0.1", acceptor.local_endpoint().port(), client_options);
    auto server = co_await acceptor.accept();
    const auto closed_at = Clock::now();
    server.close();  // like a process exit: FIN without a goodbye frame
    const auto error = co_await receive_until_failure(client);
    BOOST_CHECK_MESSAGE(contains(error, "without a goodbye"), error);
    BOOST_CHECK_LT(std::chrono::duration<double>(Clock::now() - closed_at).count(), 2.0);
    BOOST_CHECK(client.error().has_value());
    BOOST_CHECK(client.error()->is(wt::Errc::protocol_error));
  }());
}

BOOST_AUTO_TEST_CASE(black_holed_connection_fails_after_the_user_timeout) {
  asio::io_context io;
  run(
      io,
      []() -> asio::awaitable<void> {
        auto executor = co_await asio::this_coro::executor;
        const wt::ChannelOptions server_options = small_options(1);
        auto acceptor = wt::Acceptor::listen(executor, loopback(), server_options);
        auto proxy = std::make_shared<Proxy>(executor, acceptor.local_endpoint());
        proxy->start();
        auto client_options = small_options(2, 64 * 1024);
        client_options.socket.user_timeout = 1s;
        auto client = co_await Channel::connect(executor, "127.0.0.1", proxy->port(), client_options);
        auto server = co_await acceptor.accept();
        proxy->pause(1);
        // Nobody reads the server side either: both paths fill up, and
        // connection 1's path stays shut. TCP_USER_TIMEOUT must fail it.
        for (int i = 0; i < 64; ++i) client.send(make_message(1 << 20, i));
        const auto started = Clock::now();
        co_await wait_until([&] { return !client.is_open(); }, 20s, "the client channel to fail");
        const auto error = client.error()->what();
        BOOST_TEST_MESSAGE("after " << std::chrono::duration<double>(Clock::now() - started).count()
                                    << " s: " << error);
        BOOST_CHECK_MESSAGE(contains(error, "timed out"), error);
        proxy->close();
      }(),
      40s);
}

// ---- handshakes ------------------------------------------------------------

namespace {

// Connects a raw socket, sends `bytes`, returns the reply (and its reason text).
asio::awaitable<std::pair<wire::Hello, std::string>> raw_handshake(tcp::socket& socket, std::uint16_t port,
                                                                   std::span<const std::byte> bytes) {
  co_await socket.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
  co_await asio::async_write(socket, asio::buffer(bytes.data(), bytes.size()), asio::use_awaitable);
  wire::HelloBytes reply_bytes;
  co_await asio::async_read(socket, asio::buffer(reply_bytes), asio::use_awaitable);
  const auto reply = wire::decode_hello(reply_bytes);
  std::string reason(reply.reason_length, '\0');
  if (!reason.empty()) co_await asio::async_read(socket, asio::buffer(reason), asio::use_awaitable);
  co_return std::make_pair(reply, reason);
}

struct RefusalCase {
  const char* name;
  std::function<wire::Hello()> hello;
  wire::HelloStatus status;
  const char* reason_part;
};

}  // namespace

BOOST_AUTO_TEST_CASE(acceptor_refuses_bad_hellos_with_a_reason) {
  const std::vector<RefusalCase> cases{
      {"version",
       [] {
         auto h = valid_hello(1, 0, 1);
         h.version = 2;
         return h;
       },
       wire::HelloStatus::bad_version, "protocol version 2 is not supported"},
      {"magic",
       [] {
         auto h = valid_hello(1, 0, 1);
         h.magic = 0x47455420;
         return h;
       },
       wire::HelloStatus::bad_magic, "bad magic 0x47455420"},
      {"count 0", [] { return valid_hello(1, 0, 0); }, wire::HelloStatus::bad_count, "connection count 0"},
      {"count 65", [] { return valid_hello(1, 0, 65); }, wire::HelloStatus::bad_count, "connection count 65"},
      {"index", [] { return valid_hello(1, 3, 3); }, wire::HelloStatus::bad_index, "index 3 is not below"},
      {"chunk",
       [] {
         auto h = valid_hello(1, 0, 1);
         h.chunk_size = 100;
         return h;
       },
       wire::HelloStatus::bad_chunk_size, "chunk size 100"},
      {"reserved",
       [] {
         auto h = valid_hello(1, 0, 1);
         h.reserved = 9;
         return h;
       },
       wire::HelloStatus::bad_field, "reserved"},
      {"status",
       [] {
         auto h = valid_hello(1, 0, 1);
         h.status = wire::HelloStatus::busy;
         return h;
       },
       wire::HelloStatus::bad_field, "status"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("case " << c.name) {
      asio::io_context io;
      run(io, [](const RefusalCase& c) -> asio::awaitable<void> {
        auto executor = co_await asio::this_coro::executor;
        const wt::ChannelOptions options = small_options(1);
        auto acceptor = wt::Acceptor::listen(executor, loopback(), options);
        tcp::socket socket(executor);
        const auto bytes = wire::encode(c.hello());
        const auto [reply, reason] = co_await raw_handshake(socket, acceptor.local_endpoint().port(), bytes);
        BOOST_CHECK(reply.status == c.status);
        BOOST_CHECK_MESSAGE(contains(reason, c.reason_part), reason);
        const auto error = co_await accept_error(acceptor);
        BOOST_CHECK_MESSAGE(contains(error, c.reason_part) && contains(error, "refused connection from 127.0.0.1"),
                            error);
      }(c));
    }
  }
}

BOOST_AUTO_TEST_CASE(acceptor_refuses_connections_that_disagree_with_their_channel) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto executor = co_await asio::this_coro::executor;
    const wt::ChannelOptions options = small_options(1);
    auto acceptor = wt::Acceptor::listen(executor, loopback(), options);
    const auto port = acceptor.local_endpoint().port();
    tcp::socket first(executor), second(executor), third(executor);
    const auto ok = wire::encode(valid_hello(77, 0, 2));
    const auto [reply0, reason0] = co_await raw_handshake(first, port, ok);
    BOOST_CHECK(reply0.status == wire::HelloStatus::ok);
    BOOST_CHECK_EQUAL(reply0.channel_id, 77u);
    const auto other_count = wire::encode(valid_hello(77, 1, 3));
    const auto [reply1, reason1] = co_await raw_handshake(second, port, other_count);
    BOOST_CHECK(reply1.status == wire::HelloStatus::group_mismatch);
    BOOST_CHECK_MESSAGE(contains(reason1, "says 3 connections"), reason1);
    const auto error = co_await accept_error(acceptor);
    BOOST_CHECK_MESSAGE(contains(error, "says 3 connections"), error);

    // A duplicate index in a fresh channel.
    tcp::socket fourth(executor);
    const auto a = wire::encode(valid_hello(78, 0, 2));
    co_await raw_handshake(third, port, a);
    const auto [reply3, reason3] = co_await raw_handshake(fourth, port, a);
    BOOST_CHECK(reply3.status == wire::HelloStatus::duplicate_index);
    const auto duplicate_error = co_await accept_error(acceptor);
    BOOST_CHECK_MESSAGE(contains(duplicate_error, "arrived twice"), duplicate_error);
  }());
}

BOOST_AUTO_TEST_CASE(acceptor_times_out_incomplete_channels_and_silent_connections) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto executor = co_await asio::this_coro::executor;
    auto options = small_options(1);
    options.handshake_timeout = 300ms;
    auto acceptor = wt::Acceptor::listen(executor, loopback(), options);
    const auto port = acceptor.local_endpoint().port();
    tcp::socket lonely(executor), silent(executor);
    const auto hello = wire::encode(valid_hello(5, 0, 2));
    co_await raw_handshake(lonely, port, hello);
    const auto started = Clock::now();
    const auto error = co_await accept_error(acceptor);
    BOOST_CHECK_MESSAGE(contains(error, "only 1 of 2 connections arrived within 300 ms"), error);
    BOOST_CHECK_LT(std::chrono::duration<double>(Clock::now() - started).count(), 2.0);

    co_await silent.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    const auto silent_error = co_await accept_error(acceptor);
    BOOST_CHECK_MESSAGE(contains(silent_error, "no hello within 300 ms"), silent_error);
  }());
}

namespace {

// A TCP server that answers every hello with `reply` bytes (or nothing).
asio::awaitable<void> fake_server(tcp::acceptor& acceptor, std::vector<std::byte> reply) {
  for (;;) {
    auto socket = std::make_shared<tcp::socket>(co_await acceptor.async_accept(asio::use_awaitable));
    wire::HelloBytes hello;
    co_await asio::async_read(*socket, asio::buffer(hello), asio::use_awaitable);
    if (!reply.empty()) co_await asio::async_write(*socket, asio::buffer(reply), asio::use_awaitable);
    // Keep the socket open (a silent server) until the acceptor goes.
    asio::co_spawn(
        acceptor.get_executor(),
        [](std::shared_ptr<tcp::socket> s) -> asio::awaitable<void> {
          std::array<char, 64> sink;
          std::error_code ec;
          while (!ec) co_await s->async_read_some(asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
        }(socket),
        asio::detached);
  }
}

std::string connect_error(std::vector<std::byte> reply, std::chrono::milliseconds timeout) {
  asio::io_context io;
  tcp::acceptor acceptor(io, loopback());
  asio::co_spawn(io, fake_server(acceptor, std::move(reply)), asio::detached);
  auto options = small_options(2);
  options.connect_timeout = timeout;
  try {
    run(io, Channel::connect(io.get_executor(), "127.0.0.1", acceptor.local_endpoint().port(), options));
  } catch (const wt::TransportError& e) {
    return e.what();
  }
  return "(connected)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(client_reports_refusals_garbage_and_silence) {
  auto refusal = valid_hello(0, 0, 2);
  refusal.status = wire::HelloStatus::bad_version;
  const std::string text = "protocol version 1 is not supported (this side speaks 9)";
  refusal.reason_length = static_cast<std::uint16_t>(text.size());
  std::vector<std::byte> reply(wire::kHelloSize + text.size());
  const auto head = wire::encode(refusal);
  std::memcpy(reply.data(), head.data(), head.size());
  std::memcpy(reply.data() + head.size(), text.data(), text.size());
  const auto refused = connect_error(reply, 5s);
  BOOST_CHECK_MESSAGE(contains(refused, "the server refused the handshake: " + text), refused);

  std::vector<std::byte> http(wire::kHelloSize);
  const std::string response = "HTTP/1.1 400 Bad Request\r\n\r\n";
  std::memcpy(http.data(), response.data(), std::min(response.size(), http.size()));
  const auto garbage = connect_error(http, 5s);
  BOOST_CHECK_MESSAGE(contains(garbage, "not a wanlab transport server"), garbage);

  const auto started = Clock::now();
  const auto silence = connect_error({}, 300ms);
  BOOST_CHECK_MESSAGE(contains(silence, "timed out after 300 ms"), silence);
  BOOST_CHECK_LT(std::chrono::duration<double>(Clock::now() - started).count(), 2.0);
}

// ---- malformed frames from a raw peer ----------------------------------------

namespace {

struct FrameCase {
  const char* name;
  std::function<std::vector<std::byte>()> bytes;  // sent after a valid handshake
  const char* error_part;
};

std::vector<std::byte> concat(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

BOOST_AUTO_TEST_CASE(malformed_frames_close_the_channel_with_the_reason) {
  const std::vector<FrameCase> cases{
      {"bad magic",
       [] {
         auto f = frame(data(0, 10, 0, 10), 10);
         f[0] = std::byte{0};
         return f;
       },
       "bad magic"},
      {"too large", [] { return frame(data(0, 2 << 20, 0, 4096), 0); }, "above the limit of 1048576"},
      {"offset outside", [] { return frame(data(0, 10, 4096, 0), 0); }, "outside the message's 10 bytes"},
      {"misaligned", [] { return frame(data(0, 10000, 100, 4096), 0); }, "not a multiple of the chunk size 4096"},
      {"wrong length", [] { return frame(data(0, 10, 0, 11), 11); }, "has length 11, expected 10"},
      {"duplicate", [] { return concat(frame(data(0, 8192, 0, 4096), 4096), frame(data(0, 8192, 0, 4096), 4096)); },
       "arrived after message 0 offset 0"},
      {"size changes",
       [] { return concat(frame(data(0, 8192, 0, 4096), 4096), frame(data(0, 9000, 4096, 4096), 4096)); },
       "an earlier chunk said 8192"},
      {"already delivered", [] { return concat(frame(data(0, 1, 0, 1), 1), frame(data(0, 1, 0, 1), 1)); },
       "message 0 was already delivered"},
      {"checksum",
       [] {
         auto h = data(0, 100, 0, 100);
         h.flags = wire::kFlagChecksum;
         h.checksum = 1;
         return frame(h, 100);
       },
       "checksum 0x00000001 in the header"},
      {"unknown type",
       [] {
         auto f = frame(data(0, 1, 0, 1), 1);
         f[4] = std::byte{7};
         return f;
       },
       "unknown type 7"},
      {"after goodbye",
       [] {
         wire::ChunkHeader g;
         g.type = wire::FrameType::goodbye;
         return concat(frame(g, 0), frame(data(0, 1, 0, 1), 1));
       },
       "after the goodbye"},
      {"goodbye count",
       [] {
         wire::ChunkHeader g;
         g.type = wire::FrameType::goodbye;
         g.message_id = 2;
         return concat(frame(data(0, 1, 0, 1), 1), frame(g, 0));
       },
       "sent 2 messages, but only 1 arrived whole"},
      {"cut payload",
       [] {
         auto f = frame(data(0, 5000, 0, 4096), 4096);
         f.resize(f.size() - 10);
         return f;
       },
       "in the middle of message 0"},
      {"absurd id", [] { return frame(data(1ull << 62, 1, 0, 1), 1); }, "implausibly far ahead"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("case " << c.name) {
      asio::io_context io;
      run(
          io,
          [](const FrameCase& c) -> asio::awaitable<void> {
            auto executor = co_await asio::this_coro::executor;
            auto options = small_options(1);
            options.max_message_size = 1 << 20;
            auto acceptor = wt::Acceptor::listen(executor, loopback(), options);
            tcp::socket raw(executor);
            const auto hello = wire::encode(valid_hello(std::random_device{}(), 0, 1));
            const auto [reply, reason] = co_await raw_handshake(raw, acceptor.local_endpoint().port(), hello);
            BOOST_REQUIRE(reply.status == wire::HelloStatus::ok);
            auto channel = co_await acceptor.accept();
            const auto bytes = c.bytes();
            co_await asio::async_write(raw, asio::buffer(bytes), asio::use_awaitable);
            raw.shutdown(
                tcp::socket::shutdown_send);  // then EOF: "cut payload" needs it, the others must not wait for it
            const auto error = co_await receive_until_failure(channel);
            BOOST_CHECK_MESSAGE(contains(error, "connection 0 of 1: ") && contains(error, c.error_part),
                                "got: " << error);
            BOOST_CHECK(!channel.is_open());
          }(c),
          10s);
    }
  }
}
