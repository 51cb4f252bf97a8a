#include "wanlab/harness/report/ranks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "wanlab/base/parse.hpp"

namespace wanlab::harness {

std::size_t RankSelection::count() const {
  return static_cast<std::size_t>(std::count(shown.begin(), shown.end(), true));
}

RankSelection all_ranks(const Plan& plan) {
  return {std::vector<bool>(plan.workers.size(), true), fmt::format("all {} workers", plan.workers.size())};
}

namespace {

// The replica whose op ended last in the last iteration: the one that sets when it ends.
int last_to_finish(const RunRecord& record) {
  int last_iteration = -1;
  for (const Event& event : record.events) last_iteration = std::max(last_iteration, event.iteration);
  std::int64_t latest_ns = -1;
  int replica = 0;
  for (const Event& event : record.events) {
    if (event.iteration != last_iteration || event.end_ns <= latest_ns || event.worker < 0 ||
        static_cast<std::size_t>(event.worker) >= record.plan.workers.size())
      continue;
    latest_ns = event.end_ns;
    replica = record.plan.workers[static_cast<std::size_t>(event.worker)].worker.replica;
  }
  return replica;
}

}  // namespace

RankSelection representative_ranks(const RunRecord& record) {
  const Plan& plan = record.plan;
  const int critical = last_to_finish(record);
  RankSelection selection{std::vector<bool>(plan.workers.size(), false), ""};
  for (const WorkerPlan& worker_plan : plan.workers) {
    const Worker& worker = worker_plan.worker;
    selection.shown[static_cast<std::size_t>(worker.id)] = worker.replica == 0 || worker.replica == critical;
  }
  selection.description = critical == 0
                              ? fmt::format("{} of {} workers: every stage of replica 0, which finished last",
                                            selection.count(), plan.workers.size())
                              : fmt::format("{} of {} workers: every stage of replicas 0 and {} ({} finished last)",
                                            selection.count(), plan.workers.size(), critical, critical);
  return selection;
}

RankSpec parse_rank_spec(std::string_view spec, int workers) {
  RankSpec parsed;
  if (spec == "auto") return parsed;
  if (spec == "all") return {RankSpec::Kind::all, {}};
  if (spec == "representative") return {RankSpec::Kind::representative, {}};
  parsed.kind = RankSpec::Kind::listed;
  for (std::string_view rest = spec;;) {
    const std::size_t comma = rest.find(',');
    try {
      parsed.ids.push_back(base::parse_integer<int>(rest.substr(0, comma), 0, std::max(workers - 1, 0)));
    } catch (const base::ParseError& error) {
      throw std::invalid_argument(
          fmt::format("expected auto, all, representative or worker ids separated by commas (the plan has {}): {}",
                      workers, error.what()));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return parsed;
}

RankSelection select_ranks(const RunRecord& record, const RankSpec& spec) {
  const Plan& plan = record.plan;
  switch (spec.kind) {
    case RankSpec::Kind::all: return all_ranks(plan);
    case RankSpec::Kind::representative: return representative_ranks(record);
    case RankSpec::Kind::automatic:
      return record.runtime != kSimulatorRuntime || plan.workers.size() <= kAllRanksUpTo ? all_ranks(plan)
                                                                                         : representative_ranks(record);
    case RankSpec::Kind::listed: break;
  }
  RankSelection selection{std::vector<bool>(plan.workers.size(), false), ""};
  for (const int id : spec.ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= plan.workers.size())
      throw std::invalid_argument(fmt::format("no worker {} (the plan has {})", id, plan.workers.size()));
    selection.shown[static_cast<std::size_t>(id)] = true;
  }
  selection.description =
      fmt::format("{} of {} workers: {}", selection.count(), plan.workers.size(), fmt::join(spec.ids, ","));
  return selection;
}

}  // namespace wanlab::harness
