// Timing messages over the wanlab transport between two hosts of a testbed:
// one channel, its messages sent in rounds, each round's time from its send
// to the receiver holding all of it (both ends are threads of this process,
// one steady clock). Shared by the transfer-model and message-size benchmarks.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "wanlab/emulator/testbed.hpp"
#include "wanlab/transport/channel.hpp"

namespace wanlab::bench {

// Messages queued together on the channel, once the previous round has all
// arrived and `wait` has passed.
struct Round {
  std::size_t messages = 1;
  std::chrono::steady_clock::duration wait{};
};

struct ChannelSpec {
  int streams = 1;
  std::uint64_t bytes = 0;        // of each message
  std::uint64_t pacing_rate = 0;  // bytes/s per stream (SO_MAX_PACING_RATE); 0: none
  std::uint32_t chunk = 0;        // the channel's chunk, and the not-sent low-water mark
  std::uint16_t port = 0;
};

struct RoundTime {
  double seconds = 0;                                // its first send to its last message's arrival
  std::vector<transport::StreamShare> first_shares;  // how its first message left (cwnd at its first chunk)
};

// A new channel from `from` to `to`, its rounds in order. Throws
// std::runtime_error naming the channel on any failure.
std::vector<RoundTime> time_rounds(const emulator::Host& from, const emulator::Host& to, const ChannelSpec& spec,
                                   const std::vector<Round>& rounds);

}  // namespace wanlab::bench
