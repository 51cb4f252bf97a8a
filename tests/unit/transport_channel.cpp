// Channel over loopback: integrity, ordering, many messages in flight, both
// directions, graceful shutdown, limits.
#include <boost/test/unit_test.hpp>
#include <map>

#include "unit/transport_support.hpp"

using namespace transport_test;
using wt::Channel;
using wt::Message;

namespace {

struct Pair {
  Channel client;
  Channel server;
};

// GCC 12 miscompiles a co_await expression that creates two class-type
// temporaries (one is destroyed twice), so callers pass named options.
asio::awaitable<Pair> connect_pair(const wt::ChannelOptions& client_options, const wt::ChannelOptions& server_options) {
  auto executor = co_await asio::this_coro::executor;
  auto acceptor = wt::Acceptor::listen(executor, loopback(), server_options);
  auto client = co_await Channel::connect(executor, "127.0.0.1", acceptor.local_endpoint().port(), client_options);
  auto server = co_await acceptor.accept();
  co_return Pair{std::move(client), std::move(server)};
}

struct Expected {
  std::size_t size;
  std::uint64_t hash;
};

// Queues every message at once (all in flight), receives them on the other
// side and checks count, order, sizes and content.
asio::awaitable<void> transfer_and_check(Channel& from, Channel& to, const std::vector<std::size_t>& sizes,
                                         std::uint64_t seed) {
  std::vector<Expected> expected;
  std::vector<wt::SendTicket> tickets;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto message = make_message(sizes[i], seed + i);
    expected.push_back({message.size(), hash_of(message.bytes())});
    tickets.push_back(from.send(std::move(message)));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto received = co_await to.receive();
    BOOST_REQUIRE_MESSAGE(received.has_value(), "message " << i << " missing");
    BOOST_REQUIRE_EQUAL(received->size(), expected[i].size);
    BOOST_REQUIRE_MESSAGE(hash_of(received->bytes()) == expected[i].hash, "message " << i << " content differs");
  }
  for (auto& ticket : tickets) {
    co_await ticket.wait();
    BOOST_CHECK(ticket.done());
  }
}

constexpr std::uint32_t kChunk = 64 * 1024;

std::vector<std::size_t> edge_sizes() {
  return {0, 1, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 17, 0, 5, 2 * kChunk};
}

}  // namespace

BOOST_AUTO_TEST_CASE(edge_sizes_arrive_intact_over_one_connection) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    const auto client_options = small_options(1, kChunk);
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    BOOST_CHECK_EQUAL(pair.client.connection_count(), 1u);
    BOOST_CHECK_EQUAL(pair.server.connection_count(), 1u);
    BOOST_CHECK_EQUAL(pair.client.id(), pair.server.id());
    co_await transfer_and_check(pair.client, pair.server, edge_sizes(), 1);
  }());
}

BOOST_AUTO_TEST_CASE(edge_sizes_arrive_intact_over_many_connections) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    const auto client_options = small_options(16, kChunk);
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    BOOST_CHECK_EQUAL(pair.server.connection_count(), 16u);
    co_await transfer_and_check(pair.client, pair.server, edge_sizes(), 2);
    // And the other way round, with the server's own chunk size.
    co_await transfer_and_check(pair.server, pair.client, edge_sizes(), 3);
  }());
}

BOOST_AUTO_TEST_CASE(hundred_mib_message_with_one_and_many_connections) {
  asio::io_context io;
  for (unsigned connections : {1u, 8u}) {
    run(
        io,
        [](unsigned n) -> asio::awaitable<void> {
          const auto client_options = small_options(n, 512 * 1024);
          const wt::ChannelOptions server_options;
          auto pair = co_await connect_pair(client_options, server_options);
          // (GCC 12 cannot take a braced list as a temporary inside a coroutine.)
          const std::vector<std::size_t> sizes{100u << 20, 1, 100u << 20};
          co_await transfer_and_check(pair.client, pair.server, sizes, 10 + n);
          const auto stats = pair.client.stats();
          BOOST_CHECK_EQUAL(stats.bytes_sent(), 2 * (100ull << 20) + 1);
          if (n > 1) {
            unsigned used = 0;
            for (const auto& c : stats.connections) used += c.bytes_sent > 0 ? 1 : 0;
            BOOST_CHECK_MESSAGE(used >= 2, "only " << used << " of " << n << " connections carried data");
          }
        }(connections),
        60s);
  }
}

BOOST_AUTO_TEST_CASE(many_small_messages_in_flight_keep_their_order) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    const auto client_options = small_options(8, 4096);
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    std::vector<std::size_t> sizes;
    for (std::size_t i = 0; i < 3000; ++i) sizes.push_back((i * 7919) % 20000);  // 0..20 KB: 1..5 chunks
    co_await transfer_and_check(pair.client, pair.server, sizes, 100);
    const auto stats = pair.server.stats();
    BOOST_CHECK_EQUAL(stats.messages_received, 3000u);
  }());
}

BOOST_AUTO_TEST_CASE(buffer_sequence_is_sent_as_one_message) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    const auto client_options = small_options(4, 1024);
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    auto whole = make_message(10000, 7);
    const auto bytes = whole.bytes();
    // Pieces that straddle chunk boundaries, including an empty one.
    std::vector<asio::const_buffer> pieces{asio::buffer(bytes.data(), 100), asio::buffer(bytes.data() + 100, 0),
                                           asio::buffer(bytes.data() + 100, 3000),
                                           asio::buffer(bytes.data() + 3100, 6900)};
    auto ticket = pair.client.send_borrowed(std::move(pieces));
    auto received = co_await pair.server.receive();
    co_await ticket.wait();
    BOOST_REQUIRE(received);
    BOOST_CHECK_EQUAL(received->size(), 10000u);
    BOOST_CHECK(hash_of(received->bytes()) == hash_of(bytes));
    BOOST_CHECK(ticket.started_at().has_value());
    BOOST_CHECK(ticket.written_at().has_value());
  }());
}

BOOST_AUTO_TEST_CASE(a_message_records_its_streams_and_when_its_first_chunk_arrived) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto client_options = small_options(4, 4096);
    client_options.record_streams = true;
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    const auto queued = std::chrono::steady_clock::now();
    auto ticket = pair.client.send(make_message(200'000, 9));
    auto received = co_await pair.server.receive_timed();
    const auto whole = std::chrono::steady_clock::now();
    co_await ticket.wait();
    BOOST_REQUIRE(received);
    BOOST_CHECK_EQUAL(received->message.size(), 200'000u);
    BOOST_CHECK(received->first_chunk_at >= queued);
    BOOST_CHECK(received->first_chunk_at <= whole);
    BOOST_CHECK(*ticket.started_at() <= *ticket.written_at());
    // The connections that carried it: their bytes add up to the message; each
    // had a window and, after the handshake, a smoothed RTT.
    const auto streams = ticket.streams();
    BOOST_REQUIRE(!streams.empty());
    std::uint64_t bytes = 0;
    for (const auto& stream : streams) {
      BOOST_CHECK(stream.index < 4u);
      BOOST_CHECK(stream.bytes > 0u);
      BOOST_CHECK(stream.cwnd > 0u);
      BOOST_CHECK(stream.srtt_us > 0u);
      bytes += stream.bytes;
    }
    BOOST_CHECK_EQUAL(bytes, 200'000u);
    // Not asked for: nothing recorded.
    auto quiet = pair.server.send(make_message(10, 1));
    co_await quiet.wait();
    BOOST_CHECK(quiet.streams().empty());
  }());
}

BOOST_AUTO_TEST_CASE(graceful_shutdown_ends_both_directions) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    const auto client_options = small_options(4, 1024);
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    pair.client.send(make_message(5000, 1));
    pair.client.send(make_message(0, 2));
    co_await pair.client.shutdown();
    BOOST_CHECK_THROW(pair.client.send(make_message(1, 3)), wt::TransportError);

    auto first = co_await pair.server.receive();
    auto second = co_await pair.server.receive();
    auto end = co_await pair.server.receive();
    BOOST_REQUIRE(first && second);
    BOOST_CHECK_EQUAL(first->size(), 5000u);
    BOOST_CHECK_EQUAL(second->size(), 0u);
    BOOST_CHECK(!end.has_value());

    // The server may still answer after the client's shutdown.
    pair.server.send(make_message(42, 4));
    co_await pair.server.shutdown();
    auto answer = co_await pair.client.receive();
    BOOST_REQUIRE(answer);
    BOOST_CHECK_EQUAL(answer->size(), 42u);
    BOOST_CHECK(!(co_await pair.client.receive()).has_value());
    BOOST_CHECK(!pair.client.is_open());
    BOOST_CHECK(!pair.client.error().has_value());
  }());
}

BOOST_AUTO_TEST_CASE(message_above_peer_limit_is_refused_at_send) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto server_options = small_options(1);
    server_options.max_message_size = 1000;
    const auto client_options = small_options(2);
    auto pair = co_await connect_pair(client_options, server_options);
    BOOST_CHECK_EQUAL(pair.client.peer_max_message_size(), 1000u);
    pair.client.send(make_message(1000, 1));
    try {
      pair.client.send(make_message(1001, 2));
      BOOST_FAIL("a message above the peer's limit was accepted");
    } catch (const wt::TransportError& e) {
      BOOST_CHECK(e.is(wt::Errc::message_too_large));
      BOOST_CHECK_NE(std::string(e.what()).find("1000"), std::string::npos);
    }
    auto received = co_await pair.server.receive();
    BOOST_REQUIRE(received);
    BOOST_CHECK_EQUAL(received->size(), 1000u);
  }());
}

BOOST_AUTO_TEST_CASE(checksums_verify_on_the_happy_path) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto options = small_options(4, 4096);
    options.checksum = true;
    const auto client_options = options;
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    const std::vector<std::size_t> sizes{0, 1, 4095, 4096, 4097, 1 << 20};
    co_await transfer_and_check(pair.client, pair.server, sizes, 5);
  }());
}

BOOST_AUTO_TEST_CASE(receive_memory_limit_applies_backpressure_without_deadlock) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto server_options = small_options(1);
    server_options.receive_memory_limit = 256 * 1024;  // smaller than one message: only the next one fits
    const auto client_options = small_options(4, 16 * 1024);
    auto pair = co_await connect_pair(client_options, server_options);
    std::vector<std::size_t> sizes(40, 300 * 1024);
    co_await transfer_and_check(pair.client, pair.server, sizes, 9);
  }());
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused_with_the_field_named) {
  asio::io_context io;
  auto options = small_options(0);
  try {
    run(io, Channel::connect(io.get_executor(), "127.0.0.1", 1, options));
    BOOST_FAIL("connections = 0 accepted");
  } catch (const wt::TransportError& e) {
    BOOST_CHECK(e.is(wt::Errc::invalid_argument));
    BOOST_CHECK_NE(std::string(e.what()).find("connections"), std::string::npos);
  }
  options = small_options(65);
  BOOST_CHECK_THROW(run(io, Channel::connect(io.get_executor(), "127.0.0.1", 1, options)), wt::TransportError);
  options = small_options(2, 100);
  BOOST_CHECK_THROW(run(io, Channel::connect(io.get_executor(), "127.0.0.1", 1, options)), wt::TransportError);
  options = small_options(2);
  options.socket.congestion_control = "no-such-cc";
  auto acceptor = wt::Acceptor::listen(io.get_executor(), loopback());
  try {
    run(io, Channel::connect(io.get_executor(), "127.0.0.1", acceptor.local_endpoint().port(), options));
    BOOST_FAIL("unknown congestion control accepted");
  } catch (const wt::TransportError& e) {
    BOOST_CHECK_NE(std::string(e.what()).find("no-such-cc"), std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(socket_options_are_applied) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto options = small_options(2);
    options.socket.congestion_control = "reno";  // allowed for everyone by default
    options.socket.send_buffer = 256 * 1024;
    const auto client_options = options;
    const wt::ChannelOptions server_options;
    auto pair = co_await connect_pair(client_options, server_options);
    for (const auto& c : pair.client.stats().connections) {
      BOOST_REQUIRE(c.tcp.valid);
      BOOST_CHECK_EQUAL(c.tcp.congestion_control, "reno");
      BOOST_CHECK_EQUAL(c.tcp.send_buffer, 2 * 256 * 1024);  // the kernel doubles SO_SNDBUF
    }
  }());
}

BOOST_AUTO_TEST_CASE(connect_to_a_closed_port_fails_with_the_address) {
  asio::io_context io;
  std::uint16_t port;
  {
    tcp::acceptor probe(io, loopback());
    port = probe.local_endpoint().port();
  }
  try {
    run(io, Channel::connect(io.get_executor(), "127.0.0.1", port, small_options(4)));
    BOOST_FAIL("connect to a closed port succeeded");
  } catch (const wt::TransportError& e) {
    BOOST_CHECK(e.is(wt::Errc::connection_failed));
    BOOST_CHECK_MESSAGE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)) != std::string::npos, e.what());
  }
}

namespace {
asio::awaitable<void> drain_then_mark(Channel& channel, bool& drained) {
  co_await channel.drain();
  drained = true;
}
}  // namespace

// drain() returns once what was written has left the sockets: not while the
// peer's closed receive window holds it in the send queue, then soon after the
// peer reads.
BOOST_AUTO_TEST_CASE(drain_waits_for_written_bytes_to_leave_the_sockets) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    const auto client_options = small_options(1);
    auto server_options = small_options(1);
    // The server holds the first message unreceived and, above its receive
    // memory, reads no further: the second waits in a window far below it.
    server_options.socket.receive_buffer = 16 * 1024;
    server_options.receive_memory_limit = 1;
    auto pair = co_await connect_pair(client_options, server_options);
    pair.client.send(make_message(1024, 6));
    auto ticket = pair.client.send(make_message(128 * 1024, 7));  // under not_sent_lowat: all written
    co_await ticket.wait();
    std::uint64_t notsent = 0;
    for (const auto& connection : pair.client.stats().connections) notsent += connection.tcp.notsent_bytes;
    BOOST_REQUIRE_MESSAGE(notsent > 0, "the peer's window took the whole message; nothing to drain");
    bool drained = false;
    asio::co_spawn(co_await asio::this_coro::executor, drain_then_mark(pair.client, drained), asio::detached);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    timer.expires_after(200ms);
    co_await timer.async_wait(asio::use_awaitable);
    BOOST_CHECK_MESSAGE(!drained, "drain returned while the peer had not read");
    for (const std::size_t size : {1024u, 128u * 1024}) {
      auto received = co_await pair.server.receive();
      BOOST_REQUIRE(received.has_value());
      BOOST_CHECK_EQUAL(received->size(), size);
    }
    for (int i = 0; i < 200 && !drained; ++i) {
      timer.expires_after(10ms);
      co_await timer.async_wait(asio::use_awaitable);
    }
    BOOST_CHECK_MESSAGE(drained, "drain did not return within 2 s of the peer reading");
    notsent = 0;
    for (const auto& connection : pair.client.stats().connections) notsent += connection.tcp.notsent_bytes;
    BOOST_CHECK_EQUAL(notsent, 0u);
  }());
}
