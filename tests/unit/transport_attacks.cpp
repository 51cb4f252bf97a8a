// Attacks over real loopback TCP on what a peer can make a server hold
// (docs/TRANSPORT.md, "Limits on what a peer can make us hold"): a slow
// hello, channels left idle, hundreds of idle sockets, memory held by one
// channel against another, and the memory attacks on a real `wanlab perf
// server` process whose resident memory is read from /proc.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <random>
#include <thread>

#include "unit/transport_attacker.hpp"
#include "unit/transport_support.hpp"
#include "wanlab/transport/budget.hpp"

using namespace transport_test;
using transport_attack::RawPeer;
using wt::Channel;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::uint64_t random_id() { return (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}(); }

}  // namespace

BOOST_AUTO_TEST_CASE(a_slowloris_hello_is_cut_at_the_handshake_timeout) {
  asio::io_context io;
  auto options = small_options(1);
  options.handshake_timeout = 2500ms;
  auto acceptor = wt::Acceptor::listen(io.get_executor(), loopback(), options);
  const auto port = acceptor.local_endpoint().port();
  std::atomic<int> sent{0};
  std::atomic<bool> cut{false};
  const auto started = Clock::now();
  std::thread slow([&] {  // one byte of a valid hello per second
    RawPeer peer(port);
    const auto bytes = wt::wire::encode(valid_hello(random_id(), 0, 1));
    for (std::size_t i = 0; i < bytes.size() && !cut; ++i) {
      if (!peer.send(std::span(bytes).subspan(i, 1))) break;
      ++sent;
      cut = peer.closed_by_peer(1s);
    }
  });
  const auto error = run(io, accept_error(acceptor), 15s);
  const auto took = seconds_since(started);
  slow.join();
  BOOST_TEST_MESSAGE("after " << took << " s and " << sent << " bytes: " << error);
  BOOST_CHECK_MESSAGE(contains(error, "no hello within 2500 ms (") && contains(error, " of 40 bytes arrived)"), error);
  BOOST_CHECK(cut);
  BOOST_CHECK_GE(took, 2.4);
  BOOST_CHECK_LT(took, 6.0);  // a loaded machine may be late, never a byte per second for 40 s
  BOOST_CHECK_LE(sent.load(), 6);
}

namespace {

// An idle and a busy channel on an acceptor with a 1 s idle timeout, and an
// idle one on an acceptor without.
asio::awaitable<void> idle_and_busy_channels() {
  auto executor = co_await asio::this_coro::executor;
  auto server_options = small_options(1);
  server_options.idle_timeout = 1000ms;
  auto never = server_options;
  never.idle_timeout = 0ms;
  auto acceptor = wt::Acceptor::listen(executor, loopback(), server_options);
  auto patient = wt::Acceptor::listen(executor, loopback(), never);
  auto client_options = small_options(2);
  client_options.idle_timeout = 0ms;
  auto idle_client = co_await Channel::connect(executor, "127.0.0.1", acceptor.local_endpoint().port(), client_options);
  auto idle = co_await acceptor.accept();
  auto busy_client = co_await Channel::connect(executor, "127.0.0.1", acceptor.local_endpoint().port(), client_options);
  auto busy = co_await acceptor.accept();
  auto quiet_client = co_await Channel::connect(executor, "127.0.0.1", patient.local_endpoint().port(), client_options);
  auto quiet = co_await patient.accept();
  // The busy channel carries a message every 100 ms for 2.5 s: never idle for
  // 1 s, unless the machine stalls this process for 0.9 s.
  for (int i = 0; i < 25; ++i) {
    busy_client.send(make_message(100, i));
    const auto message = co_await busy.receive();
    BOOST_REQUIRE(message);
    co_await sleep(100ms);
  }
  BOOST_CHECK(busy.is_open());
  BOOST_CHECK(quiet.is_open());  // idle_timeout 0: never closed for idling
  BOOST_REQUIRE(!idle.is_open());
  const std::string error = idle.error()->what();
  BOOST_CHECK_MESSAGE(contains(error, "no progress for 1000 ms (idle timeout)"), error);
  BOOST_CHECK(idle.error()->is(wt::Errc::timed_out));
  const auto client_error = co_await receive_until_failure(idle_client);
  BOOST_CHECK_MESSAGE(contains(client_error, "without a goodbye"), client_error);  // the peer sees it end
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_channel_that_moves_nothing_is_closed_after_the_idle_timeout) {
  asio::io_context io;
  run(io, idle_and_busy_channels());
}

BOOST_AUTO_TEST_CASE(a_channel_waiting_for_memory_is_told_why_when_the_idle_timeout_ends_it) {
  asio::io_context io;
  run(io, []() -> asio::awaitable<void> {
    auto executor = co_await asio::this_coro::executor;
    auto options = small_options(1);
    options.max_message_size = kMiB;
    options.memory_budget = 2 * wt::MemoryBudget::charge_of(kMiB, wt::kMinChunkSize);
    options.idle_timeout = 800ms;
    auto acceptor = wt::Acceptor::listen(executor, loopback(), options);
    auto client_options = small_options(1);
    client_options.idle_timeout = 0ms;
    auto client = co_await Channel::connect(executor, "127.0.0.1", acceptor.local_endpoint().port(), client_options);
    auto server = co_await acceptor.accept();
    // Nobody calls receive(): message 0 waits for it, and message 1 would eat
    // into the room kept for another channel's next message.
    for (int i = 0; i < 3; ++i) client.send(make_message(kMiB, i));
    co_await wait_until([&] { return !server.is_open(); }, 10s, "the idle timeout");
    const std::string error = server.error()->what();
    BOOST_CHECK_MESSAGE(contains(error, "no progress for 800 ms") &&
                            contains(error, "1 of 1 connections wait for memory") &&
                            contains(error, "its memory budget"),
                        error);
  }());
}

namespace {

// Receives one message, checks its content, and notes when it came.
asio::awaitable<void> receive_one(Channel& channel, std::uint64_t hash, std::optional<Clock::time_point>& arrived) {
  auto message = co_await channel.receive();
  BOOST_CHECK(message && hash_of(message->bytes()) == hash);
  arrived = Clock::now();
}

// Channels 0 and 1 fill the shared budget; channel 2 waits until 0 gives memory back.
asio::awaitable<void> three_channels_on_one_budget() {
  auto executor = co_await asio::this_coro::executor;
  const auto one = wt::MemoryBudget::charge_of(kMiB, 64 * 1024);  // in the clients' chunks
  auto options = small_options(1);
  options.max_message_size = kMiB;
  options.shared_memory_budget = std::make_shared<wt::MemoryBudget>(2 * one + 1000);
  options.idle_timeout = 0ms;
  const auto& budget = *options.shared_memory_budget;
  auto acceptor = wt::Acceptor::listen(executor, loopback(), options);
  const auto port = acceptor.local_endpoint().port();
  std::vector<Channel> clients, servers;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(co_await Channel::connect(executor, "127.0.0.1", port, small_options(1)));
    servers.push_back(co_await acceptor.accept());
  }
  // Channels 0 and 1 each get a message nobody takes yet: the budget is full.
  clients[0].send(make_message(kMiB, 0));
  co_await wait_until([&] { return budget.used() >= one; }, 10s, "channel 0's message");
  clients[1].send(make_message(kMiB, 1));
  co_await wait_until([&] { return budget.used() >= 2 * one; }, 10s, "channel 1's message");
  // Channel 2's message has to wait for memory another channel holds.
  const auto expected = hash_of(make_message(kMiB, 2).bytes());
  clients[2].send(make_message(kMiB, 2));
  std::optional<Clock::time_point> arrived;
  asio::co_spawn(executor, receive_one(servers[2], expected, arrived), asio::detached);
  co_await sleep(500ms);
  BOOST_CHECK(!arrived.has_value());
  const auto released_at = Clock::now();
  const auto taken = co_await servers[0].receive();  // channel 0 takes its message: memory is free
  BOOST_REQUIRE(taken);
  co_await wait_until([&] { return arrived.has_value(); }, 5s, "channel 2's message after the release");
  BOOST_TEST_MESSAGE("channel 2 resumed " << std::chrono::duration<double>(*arrived - released_at).count()
                                          << " s after the release");
  BOOST_CHECK_EQUAL(budget.peak(), 2 * one);
  BOOST_CHECK(servers[2].is_open());
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_channel_waiting_on_the_shared_budget_resumes_when_another_releases_memory) {
  asio::io_context io;
  run(io, three_channels_on_one_budget());
}

BOOST_AUTO_TEST_CASE(idle_connections_are_shed_so_that_a_real_channel_still_gets_in) {
  asio::io_context io;
  auto options = small_options(1);
  options.handshake_timeout = 60s;  // the idle sockets must not time out while a slow machine opens them
  auto acceptor = wt::Acceptor::listen(io.get_executor(), loopback(), options);
  const auto port = acceptor.local_endpoint().port();
  std::atomic<int> opened{0};
  std::atomic<bool> done{false};
  std::thread flood([&] {  // 300 sockets that send nothing, or a few bytes of a hello
    std::vector<std::unique_ptr<RawPeer>> peers;
    for (int i = 0; i < 300; ++i) {
      peers.push_back(std::make_unique<RawPeer>(port));
      if (i % 3 == 0) peers.back()->send(std::vector<std::byte>(10, std::byte{0x57}));
      ++opened;
    }
    while (!done) std::this_thread::sleep_for(10ms);
  });
  std::size_t shed = 0;
  run(io, [&]() -> asio::awaitable<void> {
    auto executor = co_await asio::this_coro::executor;
    co_await wait_until([&] { return opened == 300; }, 20s, "300 idle sockets");
    co_await sleep(200ms);  // let the acceptor take them all
    auto connecting = small_options(4);
    connecting.idle_timeout = 0ms;
    std::optional<Channel> client;
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
          client.emplace(co_await Channel::connect(executor, "127.0.0.1", port, connecting));
        },
        asio::detached);
    std::optional<Channel> server;
    while (!server) {
      try {
        server.emplace(co_await acceptor.accept());
      } catch (const wt::TransportError& e) {
        BOOST_REQUIRE_MESSAGE(contains(e.what(), "shed connection from 127.0.0.1:"), e.what());
        if (shed++ == 0) BOOST_TEST_MESSAGE(e.what());
      }
    }
    co_await wait_until([&] { return client.has_value(); }, 5s, "the client's channel");
    client->send(make_message(1000, 7));
    auto message = co_await server->receive();
    BOOST_CHECK(message && message->size() == 1000u);
  }());
  done = true;
  flood.join();
  // 300 + 4 connections for 256 places: at least 48 idle ones had to go.
  BOOST_TEST_MESSAGE(shed << " connections shed");
  BOOST_CHECK_GE(shed, 48u);
}

// ---- a real `wanlab perf server` under attack --------------------------------

namespace {

using transport_attack::PerfServerProcess;
using transport_attack::run_wanlab;

// The huge-page attack on one channel: 1 KiB chunks 2 MiB apart over a
// message of the largest size the server allows.
std::unique_ptr<RawPeer> sparse_attack(std::uint16_t port, std::uint64_t* sent) {
  auto peer = std::make_unique<RawPeer>(port);
  const auto reply = peer->handshake(random_id(), 0, 1, 1024);
  const auto size = reply.max_message_size;
  for (std::uint64_t offset = 0; offset < size; offset += 2 * kMiB) {
    BOOST_REQUIRE(peer->send_chunk(0, size, offset, 1024));
    *sent += 1024;
  }
  return peer;
}

// Six messages of 8 MiB, each sent whole but for its last chunk, so that the
// server keeps them all: real bytes. Stops when the server stops reading.
constexpr std::uint64_t kFillChunk = 64 * 1024;
constexpr std::uint64_t kFillOffered = 6 * (8 * kMiB - kFillChunk);

std::unique_ptr<RawPeer> fill_attack(std::uint16_t port, std::uint64_t* sent) {
  constexpr std::uint64_t size = 8 * kMiB;
  auto peer = std::make_unique<RawPeer>(port);
  peer->handshake(random_id(), 0, 1, kFillChunk);
  for (std::uint64_t id = 0; id < 6; ++id) {
    for (std::uint64_t offset = 0; offset + kFillChunk < size; offset += kFillChunk) {
      if (!peer->send_chunk(id, size, offset, kFillChunk, 1s)) return peer;
      *sent += kFillChunk;
    }
  }
  return peer;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sparse_chunks_do_not_fault_huge_pages_in_a_real_perf_server) {
  PerfServerProcess server({"--idle-timeout", "20"});  // the default budget: 1 GiB messages
  const auto before = server.memory();
  std::uint64_t sent = 0;
  auto first = sparse_attack(server.port(), &sent);
  auto second = sparse_attack(server.port(), &sent);
  std::this_thread::sleep_for(1s);  // for the server to read it all
  const auto after = server.memory();
  BOOST_TEST_MESSAGE("two channels, " << sent << " bytes sent: peak RSS " << (before.peak >> 20) << " -> "
                                      << (after.peak >> 20) << " MiB (1.06 GB per channel before the fix)");
  BOOST_CHECK(server.running());
  BOOST_CHECK(!first->closed_by_peer(0ms));  // the chunks were valid: the server kept them
  BOOST_CHECK(!second->closed_by_peer(0ms));
  BOOST_CHECK_LT(after.peak - before.peak, 32 * kMiB);
}

BOOST_AUTO_TEST_CASE(a_real_perf_server_stays_under_its_memory_budget_and_still_serves_afterwards) {
  constexpr std::uint64_t budget = 64 * kMiB;
  PerfServerProcess server({"--memory-budget", "64M", "--idle-timeout", "3"});
  const auto before = server.memory();
  std::uint64_t sparse_sent = 0, fill_sent = 0;
  // Six channels push real bytes at once, then four sparse ones follow.
  std::vector<std::thread> fillers;
  std::vector<std::unique_ptr<RawPeer>> filled(6);
  std::vector<std::uint64_t> filled_bytes(6, 0);
  std::atomic<int> refused{0};
  for (std::size_t i = 0; i < filled.size(); ++i) {
    fillers.emplace_back([&, i] {
      try {
        filled[i] = fill_attack(server.port(), &filled_bytes[i]);
      } catch (const std::exception&) {
        ++refused;
      }
    });
  }
  for (auto& filler : fillers) filler.join();
  BOOST_REQUIRE_EQUAL(refused.load(), 0);
  for (const auto bytes : filled_bytes) fill_sent += bytes;
  std::vector<std::unique_ptr<RawPeer>> attackers;
  for (int i = 0; i < 4; ++i) attackers.push_back(sparse_attack(server.port(), &sparse_sent));
  std::this_thread::sleep_for(500ms);
  const auto during = server.memory();
  BOOST_TEST_MESSAGE("sparse " << sparse_sent << " bytes and fill " << (fill_sent >> 20) << " MiB sent: peak RSS "
                               << (before.peak >> 20) << " -> " << (during.peak >> 20) << " MiB, budget "
                               << (budget >> 20) << " MiB");
  // Unbounded, the server would have taken all 6 x 47.6 MiB; it stopped reading...
  BOOST_CHECK_LT(fill_sent, 6 * kFillOffered - budget);
  BOOST_CHECK_GT(fill_sent, budget / 2);
  BOOST_CHECK_LT(during.peak - before.peak, budget + 16 * kMiB);  // ...within its budget

  // The idle timeout ends every attacker, and their memory is given back.
  for (auto* group : {&attackers, &filled}) {
    for (auto& attacker : *group) BOOST_CHECK(attacker->closed_by_peer(10s));
  }
  std::this_thread::sleep_for(200ms);
  BOOST_CHECK_LT(server.memory().rss, before.rss + 16 * kMiB);

  // A real client still gets through, and one whose messages exceed what the
  // budget allows is told so at once.
  const auto client = run_wanlab(
      {"perf", "client", "127.0.0.1", "-p", std::to_string(server.port()), "-P", "4", "-n", "32M", "--json"});
  BOOST_CHECK_MESSAGE(client.status == 0 && contains(client.output, "\"goodput_bps\""), client.output);
  const auto too_large = run_wanlab(
      {"perf", "client", "127.0.0.1", "-p", std::to_string(server.port()), "--message-size", "48M", "-n", "48M"});
  BOOST_CHECK_EQUAL(too_large.status, 1);
  BOOST_CHECK_MESSAGE(contains(too_large.output, "exceeds the peer's limit of"), too_large.output);
  BOOST_CHECK_LT(server.memory().peak - before.peak, budget + 16 * kMiB);
}

BOOST_AUTO_TEST_CASE(three_hundred_idle_sockets_do_not_lock_a_real_client_out) {
  PerfServerProcess server({});
  std::vector<std::unique_ptr<RawPeer>> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(std::make_unique<RawPeer>(server.port()));
  std::this_thread::sleep_for(300ms);
  const auto client =
      run_wanlab({"perf", "client", "127.0.0.1", "-p", std::to_string(server.port()), "-n", "4M", "--json"});
  BOOST_CHECK_MESSAGE(client.status == 0 && contains(client.output, "\"goodput_bps\""), client.output);
  BOOST_CHECK(contains(server.output(), "shed connection from 127.0.0.1:"));
}
