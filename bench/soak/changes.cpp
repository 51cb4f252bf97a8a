#include "soak/changes.hpp"

#include <fmt/format.h>

namespace wanlab::bench::soak {

SetChange change_for(int k) {
  static const int kDcPairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  const int p = k % 3, round = k / 3;
  SetChange change;
  change.from = kDcPairs[p][0];
  change.to = kDcPairs[p][1];
  if (round % 4 == 3) {
    change.one_way = true;
    std::swap(change.from, change.to);
  }
  auto pick = [](const std::vector<std::string>& values, int index) {
    return values[static_cast<std::size_t>(index) % values.size()];
  };
  change.fields = {{"rate", pick(kRates, round + p)},
                   {"delay", pick(kDelays, round + 2 * p)},
                   {"loss", pick(kLosses, round + p)},
                   {"jitter", pick(kJitters, round)},
                   {"queue", pick(kQueues, round + round / 5 + p)}};
  return change;
}

std::string describe(const SetChange& change, const std::vector<std::string>& dcs) {
  std::string text =
      fmt::format("{} {}", dcs[static_cast<std::size_t>(change.from)], dcs[static_cast<std::size_t>(change.to)]);
  for (const auto& [field, value] : change.fields) text += fmt::format(" --{} {}", field, value);
  return text + (change.one_way ? " --one-way" : "");
}

std::vector<std::string> set_argv(const std::string& wanlab, const emulator::TestbedState& state,
                                  const SetChange& change) {
  std::vector<std::string> argv = {wanlab,
                                   "set",
                                   state.dcs[static_cast<std::size_t>(change.from)],
                                   state.dcs[static_cast<std::size_t>(change.to)],
                                   "--testbed",
                                   state.name};
  for (const auto& [field, value] : change.fields) {
    argv.push_back("--" + field);
    argv.push_back(value);
  }
  if (change.one_way) argv.push_back("--one-way");
  return argv;
}

}  // namespace wanlab::bench::soak
