// Attacks over real loopback TCP on what a peer can make a server hold
// (docs/TRANSPORT.md, "Limits on what a peer can make us hold"): memory held
// by one channel against another.
#include <boost/test/unit_test.hpp>

#include "unit/transport_support.hpp"
#include "wanlab/transport/budget.hpp"

// GCC 12 takes the larger coroutine frames below for memory freed by a
// mismatched operator delete: it sees Asio's aligned_alloc but not the free()
// behind the frame's class operator delete (GCC bug 109224, a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

using namespace transport_test;
using wt::Channel;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

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
  BOOST_TEST_MESSAGE("channel 2 resumed " << std::chrono::duration<double>(*arrived - released_at).count() << " s after the release");
  BOOST_CHECK_EQUAL(budget.peak(), 2 * one);
  BOOST_CHECK(servers[2].is_open());
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_channel_waiting_on_the_shared_budget_resumes_when_another_releases_memory) {
  asio::io_context io;
  run(io, three_channels_on_one_budget());
}
