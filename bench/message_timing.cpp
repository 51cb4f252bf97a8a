#include "message_timing.hpp"

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/rtnl.hpp"

namespace wanlab::bench {
namespace em = wanlab::emulator;
namespace tp = wanlab::transport;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// What the receiver thread tells the sender thread.
struct Arrivals {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Clock::time_point> at;
  std::string error;

  void fail(const std::string& what) {
    std::lock_guard lock(mutex);
    error = "receiver: " + what;
    changed.notify_all();
  }
};

// An exception out of a coroutine, as text for `out`.
auto keep_error(std::string& out) {
  return [&out](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      out = e.what();
    }
  };
}

// Accepts one channel in `to`'s namespace and notes when each message
// arrives, on `io` (which the sender stops if it fails: then no channel comes).
void receive_all(const em::Host& to, const ChannelSpec& spec, Arrivals& arrivals, std::atomic<bool>& listening,
                 asio::io_context& io) {
  try {
    em::NetnsScope in(to.netns);
    std::string failure;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          tp::ChannelOptions options;
          options.chunk_size = spec.chunk;
          options.idle_timeout = 0ms;
          const auto address = asio::ip::make_address(em::ipv4_to_string(to.ipv4));
          auto acceptor = tp::Acceptor::listen(io.get_executor(), {address, spec.port}, options);
          listening = true;
          tp::Channel channel = co_await acceptor.accept();
          while (auto message = co_await channel.receive()) {
            std::lock_guard lock(arrivals.mutex);
            arrivals.at.push_back(Clock::now());
            arrivals.changed.notify_all();
          }
        },
        keep_error(failure));
    io.run();
    if (!failure.empty()) arrivals.fail(failure);
  } catch (const std::exception& e) {
    arrivals.fail(e.what());
  }
}

// Polls until `count` messages have arrived (so the io_context keeps serving
// the channel meanwhile); returns the last one's arrival. A signal ends the
// wait (base::Interrupted), so a long transfer does not hold the benchmark.
asio::awaitable<Clock::time_point> arrived(Arrivals& arrivals, std::size_t count, asio::steady_timer& timer) {
  while (true) {
    base::check_interrupted();
    {
      std::lock_guard lock(arrivals.mutex);
      if (!arrivals.error.empty()) throw std::runtime_error(arrivals.error);
      if (arrivals.at.size() >= count) co_return arrivals.at[count - 1];
    }
    timer.expires_after(200us);
    co_await timer.async_wait(asio::use_awaitable);
  }
}

}  // namespace

std::vector<RoundTime> time_rounds(const em::Host& from, const em::Host& to, const ChannelSpec& spec,
                                   const std::vector<Round>& rounds) {
  Arrivals arrivals;
  std::atomic<bool> listening{false};
  asio::io_context receiver_io;
  std::thread receiver([&] { receive_all(to, spec, arrivals, listening, receiver_io); });
  while (!listening) {
    {
      std::lock_guard lock(arrivals.mutex);
      if (!arrivals.error.empty()) break;
    }
    std::this_thread::sleep_for(1ms);
  }

  std::vector<RoundTime> times;
  std::string failure;
  {
    em::NetnsScope in(from.netns);
    asio::io_context io;
    const std::vector<std::byte> payload(spec.bytes);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          tp::ChannelOptions options;
          options.connections = static_cast<unsigned>(spec.streams);
          options.chunk_size = spec.chunk;
          options.socket.not_sent_lowat = spec.chunk;
          options.idle_timeout = 0ms;
          options.record_streams = true;
          options.socket.max_pacing_rate = spec.pacing_rate;
          tp::Channel channel =
              co_await tp::Channel::connect(io.get_executor(), em::ipv4_to_string(to.ipv4), spec.port, options);
          asio::steady_timer timer(io);
          std::size_t sent = 0;
          for (const Round& round : rounds) {
            if (round.wait != Clock::duration::zero()) {
              timer.expires_after(round.wait);
              co_await timer.async_wait(asio::use_awaitable);
            }
            const auto start = Clock::now();
            std::vector<tp::SendTicket> tickets;
            for (std::size_t i = 0; i < round.messages; ++i)
              tickets.push_back(channel.send_borrowed(std::span<const std::byte>(payload.data(), payload.size())));
            sent += round.messages;
            const Clock::time_point last = co_await arrived(arrivals, sent, timer);
            times.push_back({std::chrono::duration<double>(last - start).count(), tickets.front().streams()});
          }
          co_await channel.shutdown();
        },
        keep_error(failure));
    io.run();
  }
  if (!failure.empty()) receiver_io.stop();
  receiver.join();
  const std::string what = fmt::format("{} streams, {} bytes", spec.streams, spec.bytes);
  if (!failure.empty()) throw std::runtime_error(fmt::format("{}: {}", what, failure));
  if (times.size() != rounds.size()) throw std::runtime_error(fmt::format("{}: {}", what, arrivals.error));
  return times;
}

}  // namespace wanlab::bench
