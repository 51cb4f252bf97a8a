// The soak's live changes: a `wanlab set` every second, on one DC pair in
// turn, through cycles of rates, delays, losses, jitters and queues.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "wanlab/emulator/testbed.hpp"

namespace wanlab::bench::soak {

// What `wanlab set` cycles through. Rates, delays, losses and queues run on
// cycles of different lengths so that their combinations vary; "12s" is the
// queue no sender here can fill (see QueueBound, drops.hpp), the others overflow.
inline const std::vector<std::string> kRates = {"20mbit", "50mbit", "100mbit", "30mbit", "70mbit"};
inline const std::vector<std::string> kDelays = {"5ms", "20ms", "40ms", "70ms"};
inline const std::vector<std::string> kLosses = {"0%", "0%", "0.1%", "0%", "1%", "0%", "0.5%"};
inline const std::vector<std::string> kJitters = {"0ms", "0ms", "1ms"};
inline const std::vector<std::string> kQueues = {"1bdp", "20ms", "12s", "0.5bdp", "12s"};
inline constexpr double kSlowestRateBps = 20e6;

struct SetChange {
  int from = 0, to = 0;  // DC indices
  bool one_way = false;
  std::vector<std::pair<std::string, std::string>> fields;
};

// The k-th change: DC pair k mod 3, both directions, except every fourth
// round, which changes one direction only.
SetChange change_for(int k);
// "east west --rate 20mbit ... [--one-way]", for messages.
std::string describe(const SetChange& change, const std::vector<std::string>& dcs);
// `wanlab set` making the change on the testbed.
std::vector<std::string> set_argv(const std::string& wanlab, const emulator::TestbedState& state,
                                  const SetChange& change);

}  // namespace wanlab::bench::soak
