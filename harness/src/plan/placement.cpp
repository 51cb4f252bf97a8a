// Placements: Atlas DC selection (Algorithm 1 plus hop ordering), the PP- and
// DP-across-DC baselines and explicit per-stage lists.
#include "plan/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "experiment/text.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness {
namespace {

constexpr std::size_t kMaxDcsToPermute = 8;

struct StageBlock {
  int dc = 0;
  int stages = 0;
};

std::string plural(int count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

std::vector<std::string_view> dc_names(const emulator::Scenario& scenario) {
  std::vector<std::string_view> names;
  for (const emulator::Dc& dc : scenario.dcs) names.push_back(dc.name);
  return names;
}

std::string unknown_dc_message(const std::string& field, const std::string& dc, const emulator::Scenario& scenario) {
  std::vector<std::string_view> names = dc_names(scenario);
  std::vector<std::string> listed(names.begin(), names.end());
  return fmt::format("{}: unknown DC {} in testbed {}{}", field, base::quoted(dc), scenario.name,
                     detail::suggestion(dc, names, fmt::format(" (DCs: {})", detail::join(listed))));
}

// Every (DC index, GPUs) in [gpus] order, or every testbed DC with `unlimited`.
std::vector<std::pair<int, int>> indexed_gpus(const std::vector<std::pair<std::string, int>>& gpus,
                                              const emulator::Scenario& scenario, int unlimited) {
  std::vector<std::pair<int, int>> indexed;
  if (gpus.empty()) {
    for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc) indexed.emplace_back(static_cast<int>(dc), unlimited);
    return indexed;
  }
  for (const auto& [name, count] : gpus) {
    int dc = scenario.dc_index(name);
    if (dc < 0) throw ExperimentError(unknown_dc_message("gpus." + name, name, scenario));
    indexed.emplace_back(dc, count);
  }
  return indexed;
}

// Round trips between consecutive blocks: what a microbatch's activations and
// gradients spend in flight on the pipeline's WAN hops.
std::uint64_t chain_rtt(const std::vector<StageBlock>& blocks, const std::vector<std::size_t>& order,
                        const emulator::Scenario& scenario) {
  std::uint64_t total = 0;
  for (std::size_t i = 1; i < order.size(); ++i) {
    total += scenario.rtt_ns(blocks[order[i - 1]].dc, blocks[order[i]].dc);
  }
  return total;
}

// Beyond kMaxDcsToPermute blocks: from each block in turn, always on to the
// nearest block not yet visited; the shortest of those chains.
std::vector<std::size_t> nearest_neighbour_chain(const std::vector<StageBlock>& blocks,
                                                 const emulator::Scenario& scenario, std::size_t first) {
  std::vector<std::size_t> chain{first};
  std::vector<bool> visited(blocks.size(), false);
  visited[first] = true;
  while (chain.size() < blocks.size()) {
    std::size_t next = blocks.size();
    for (std::size_t candidate = 0; candidate < blocks.size(); ++candidate) {
      if (visited[candidate]) continue;
      if (next == blocks.size() || scenario.rtt_ns(blocks[chain.back()].dc, blocks[candidate].dc) <
                                       scenario.rtt_ns(blocks[chain.back()].dc, blocks[next].dc)) {
        next = candidate;
      }
    }
    visited[next] = true;
    chain.push_back(next);
  }
  return chain;
}

std::vector<StageBlock> order_blocks_by_latency(const std::vector<StageBlock>& blocks,
                                                const emulator::Scenario& scenario) {
  if (blocks.size() < 3) return blocks;
  std::vector<std::size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<std::size_t> best = order;
  std::uint64_t best_cost = chain_rtt(blocks, order, scenario);
  auto keep_if_shorter = [&](const std::vector<std::size_t>& candidate) {
    std::uint64_t cost = chain_rtt(blocks, candidate, scenario);
    if (cost < best_cost) {
      best_cost = cost;
      best = candidate;
    }
  };
  if (blocks.size() > kMaxDcsToPermute) {
    for (std::size_t first = 0; first < blocks.size(); ++first)
      keep_if_shorter(nearest_neighbour_chain(blocks, scenario, first));
  } else {
    while (std::next_permutation(order.begin(), order.end())) keep_if_shorter(order);
  }
  std::vector<StageBlock> ordered;
  for (std::size_t index : best) ordered.push_back(blocks[index]);
  return ordered;
}

[[noreturn]] void fail_atlas(const std::vector<std::pair<int, int>>& sorted, int placed, int pp, int dp, int tp,
                             const emulator::Scenario& scenario) {
  std::vector<std::string> offers;
  for (const auto& [dc, count] : sorted) {
    offers.push_back(fmt::format("{}={}", scenario.dcs[static_cast<std::size_t>(dc)].name, count));
  }
  int missing = pp - placed;
  throw ExperimentError(
      fmt::format("atlas placement needs {} GPUs for {} x dp {} x tp {}; {} give {}: {} ({} GPUs) missing",
                  pp * dp * tp, plural(pp, "stage"), dp, tp, offers.empty() ? "no DCs" : detail::join(offers, " "),
                  plural(placed, "stage"), plural(missing, "stage"), missing * dp * tp));
}

}  // namespace

std::vector<int> select_dcs(const std::vector<std::pair<std::string, int>>& gpus, int pp, int dp, int tp,
                            const emulator::Scenario& scenario, bool order_by_latency) {
  std::vector<std::pair<int, int>> sorted = indexed_gpus(gpus, scenario, pp * dp * tp);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<StageBlock> blocks;
  int placed = 0;
  for (const auto& [dc, count] : sorted) {
    if (placed == pp) break;
    int stages = std::min(count / (tp * dp), pp - placed);
    if (stages == 0) continue;
    blocks.push_back({dc, stages});
    placed += stages;
  }
  if (placed < pp) fail_atlas(sorted, placed, pp, dp, tp, scenario);
  if (order_by_latency) blocks = order_blocks_by_latency(blocks, scenario);
  std::vector<int> stage_dc;
  for (const StageBlock& block : blocks)
    stage_dc.insert(stage_dc.end(), static_cast<std::size_t>(block.stages), block.dc);
  return stage_dc;
}

namespace detail {
namespace {

// DCs offering GPUs, in [gpus] order (the testbed's when [gpus] is absent).
std::vector<int> offering_dcs(const Experiment& experiment, const emulator::Scenario& scenario,
                              const std::vector<int>& available) {
  std::vector<int> dcs;
  if (experiment.gpus.empty()) {
    for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc) dcs.push_back(static_cast<int>(dc));
    return dcs;
  }
  for (const auto& [name, count] : experiment.gpus) {
    int dc = scenario.dc_index(name);
    if (available[static_cast<std::size_t>(dc)] > 0 && std::find(dcs.begin(), dcs.end(), dc) == dcs.end()) {
      dcs.push_back(dc);
    }
  }
  if (dcs.empty()) {
    throw ExperimentError(fmt::format("{}: gpus: no DC offers a GPU", experiment.where("gpus")));
  }
  return dcs;
}

std::vector<int> explicit_stage_dcs(const Experiment& experiment, const emulator::Scenario& scenario) {
  std::vector<int> stage_dc;
  for (std::size_t stage = 0; stage < experiment.placement_dcs.size(); ++stage) {
    const std::string& name = experiment.placement_dcs[stage];
    int dc = scenario.dc_index(name);
    if (dc < 0) {
      std::string field = fmt::format("placement[{}]", stage);
      throw ExperimentError(fmt::format("{}: {}", experiment.where(field), unknown_dc_message(field, name, scenario)));
    }
    stage_dc.push_back(dc);
  }
  return stage_dc;
}

std::string index_list(const std::vector<int>& indices) {
  std::vector<std::string> texts;
  for (int index : indices) texts.push_back(std::to_string(index));
  return detail::join(texts);
}

// Every DC must hold the tp GPUs of each of its workers.
void check_capacity(const Experiment& experiment, const emulator::Scenario& scenario, const std::vector<int>& available,
                    const std::vector<std::vector<int>>& dc_of) {
  const Parallel& parallel = experiment.parallel;
  for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc) {
    std::vector<int> stages;
    std::vector<int> replicas;
    int workers = 0;
    for (int replica = 0; replica < parallel.dp; ++replica) {
      for (int stage = 0; stage < parallel.pp; ++stage) {
        if (dc_of[static_cast<std::size_t>(replica)][static_cast<std::size_t>(stage)] != static_cast<int>(dc)) continue;
        ++workers;
        if (std::find(stages.begin(), stages.end(), stage) == stages.end()) stages.push_back(stage);
        if (std::find(replicas.begin(), replicas.end(), replica) == replicas.end()) replicas.push_back(replica);
      }
    }
    int needed = workers * parallel.tp;
    if (needed <= available[dc]) continue;
    const std::string& name = scenario.dcs[dc].name;
    std::string what = experiment.placement == Placement::dp_across_dc
                           ? fmt::format("replica{} {} x pp {} x tp {}", replicas.size() == 1 ? "" : "s",
                                         index_list(replicas), parallel.pp, parallel.tp)
                           : fmt::format("stage{} {} x dp {} x tp {}", stages.size() == 1 ? "" : "s",
                                         index_list(stages), parallel.dp, parallel.tp);
    std::string field = experiment.gpus.empty() ? "placement" : "gpus." + name;
    throw ExperimentError(fmt::format("{}: {}: {} placement needs {} GPUs in {} ({}); [gpus] gives {} = {}",
                                      experiment.where(field), field, to_string(experiment.placement), needed, name,
                                      what, name, available[dc]));
  }
}

}  // namespace

std::vector<int> available_gpus(const Experiment& experiment, const emulator::Scenario& scenario) {
  const Parallel& parallel = experiment.parallel;
  if (experiment.gpus.empty()) {
    return std::vector<int>(scenario.dcs.size(), parallel.pp * parallel.dp * parallel.tp);
  }
  std::vector<int> available(scenario.dcs.size(), 0);
  for (const auto& [name, count] : experiment.gpus) {
    int dc = scenario.dc_index(name);
    if (dc < 0) {
      std::string field = "gpus." + name;
      throw ExperimentError(fmt::format("{}: {}", experiment.where(field), unknown_dc_message(field, name, scenario)));
    }
    available[static_cast<std::size_t>(dc)] = count;
  }
  return available;
}

std::vector<std::vector<int>> place_workers(const Experiment& experiment, const emulator::Scenario& scenario) {
  const Parallel& parallel = experiment.parallel;
  std::vector<int> available = available_gpus(experiment, scenario);
  std::vector<std::vector<int>> dc_of(static_cast<std::size_t>(parallel.dp),
                                      std::vector<int>(static_cast<std::size_t>(parallel.pp), 0));
  auto same_for_every_replica = [&](const std::vector<int>& stage_dc) {
    for (auto& stages : dc_of) stages = stage_dc;
  };
  switch (experiment.placement) {
    case Placement::atlas:
      try {
        same_for_every_replica(
            select_dcs(experiment.gpus, parallel.pp, parallel.dp, parallel.tp, scenario, experiment.reorder_dcs));
      } catch (const ExperimentError& error) {
        throw ExperimentError(fmt::format("{}: {}", experiment.where("placement"), error.what()));
      }
      return dc_of;  // select_dcs only places what fits
    case Placement::pp_across_dc: {
      std::vector<int> dcs = offering_dcs(experiment, scenario, available);
      std::vector<int> stage_dc;
      for (int stage = 0; stage < parallel.pp; ++stage)
        stage_dc.push_back(dcs[static_cast<std::size_t>(stage) % dcs.size()]);
      same_for_every_replica(stage_dc);
      break;
    }
    case Placement::dp_across_dc: {
      std::vector<int> dcs = offering_dcs(experiment, scenario, available);
      for (int replica = 0; replica < parallel.dp; ++replica) {
        int dc = dcs[static_cast<std::size_t>(replica) % dcs.size()];
        dc_of[static_cast<std::size_t>(replica)].assign(static_cast<std::size_t>(parallel.pp), dc);
      }
      break;
    }
    case Placement::explicit_list: same_for_every_replica(explicit_stage_dcs(experiment, scenario)); break;
  }
  check_capacity(experiment, scenario, available, dc_of);
  return dc_of;
}

void check_decode_dc(const Experiment& experiment, const emulator::Scenario& scenario) {
  const std::string& dc = experiment.prefill.decode_dc;
  const std::string field = "prefill.decode_dc";
  if (experiment.prefill.enabled && experiment.prefill.decode_local() && scenario.dc_index(dc) >= 0) {
    throw ExperimentError(
        fmt::format("{}: \"{}\" means each worker's own DC, but the testbed also has a DC of that name; rename it",
                    experiment.where(field), dc));
  }
  if (!experiment.prefill.enabled || experiment.prefill.decode_local() || scenario.dc_index(dc) >= 0) return;
  throw ExperimentError(fmt::format("{}: {}", experiment.where(field), unknown_dc_message(field, dc, scenario)));
}

}  // namespace detail
}  // namespace wanlab::harness
