// The soak's pass and miss rules, as the summary lines it prints: memory and
// descriptors flat after the warm-up, only configured drops, nothing left
// after `down`, the long streams kept up, every `set` done.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "soak/config.hpp"
#include "soak/drops.hpp"
#include "soak/load.hpp"
#include "soak/sampler.hpp"

namespace wanlab::bench::soak {

// What the soak saw: its rows, its pairs' drops, its load, and how `down` went.
struct Observed {
  const std::vector<Row>& rows;
  const std::vector<PairTrack>& pairs;
  const LoadTotals& load;
  const std::vector<std::string>& leftovers;
  double down_seconds = 0;
  std::size_t processes_at_down = 0;  // in the testbed's namespaces
};

struct Verdicts {
  std::vector<std::string> summary;  // one line each, then the details
  bool pass = false;
};

Verdicts judge(const Config& config, const Observed& observed);

}  // namespace wanlab::bench::soak
