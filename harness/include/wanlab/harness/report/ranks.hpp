// Which workers (ranks) a run's outputs draw in full: trace.json's worker
// tracks and their transfers, timeline.svg's rows, ranks/rank-N.json. A
// simulated run of thousands of GPUs has an answer that fits in a page, and
// outputs of every rank no one can open (a 10,000-GPU job wrote 230 MB), so
// by default such a run shows representative workers and summarises the rest.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {

// Up to this many workers, `auto` shows every one (the shipped experiments
// have 3-16; their outputs stay a few MB).
inline constexpr std::size_t kAllRanksUpTo = 64;

struct RankSelection {
  std::vector<bool> shown;  // per worker id
  std::string description;  // "all 6 workers", "32 of 1248 workers: ..."
  bool shows(int worker) const {
    return worker >= 0 && static_cast<std::size_t>(worker) < shown.size() && shown[static_cast<std::size_t>(worker)];
  }
  std::size_t count() const;
  bool all() const { return count() == shown.size(); }
};

// What --ranks asks for, before there is a plan: `spec` is "auto" (a real
// run, or a plan of at most kAllRanksUpTo workers: all; else
// representative), "all", "representative", or worker ids ("0,17,40", each
// below `workers`, a plan's pp x dp). std::invalid_argument naming what is wrong.
struct RankSpec {
  enum class Kind { automatic, all, representative, listed } kind = Kind::automatic;
  std::vector<int> ids;  // listed
};
RankSpec parse_rank_spec(std::string_view spec, int workers);

RankSelection all_ranks(const Plan& plan);
// Every stage of replica 0, and of the replica whose last op of the last
// iteration ended last (the one that sets the iteration's end), when another.
RankSelection representative_ranks(const RunRecord& record);
// The workers `spec` asks for in `record`'s plan; std::invalid_argument for
// an id the plan has not.
RankSelection select_ranks(const RunRecord& record, const RankSpec& spec);

}  // namespace wanlab::harness
