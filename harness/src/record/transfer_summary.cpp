// Per-link order statistics of the transfers of a run, measured and simulated.
#include <algorithm>
#include <map>
#include <tuple>

#include "record/record_internal.hpp"
#include "wanlab/base/stats.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {
namespace {

struct Samples {
  std::vector<double> transfer_s;
  std::vector<double> wait_s;
  // Per (sender, receiver, stream): tcpi_total_retrans at the first and the
  // last message's start; it only grows, so the two are the least and most.
  std::map<std::tuple<int, int, int>, std::pair<std::uint32_t, std::uint32_t>> retransmitted;
};

std::optional<std::uint64_t> retransmitted_between(const Samples& samples) {
  if (samples.retransmitted.empty()) return std::nullopt;
  std::uint64_t total = 0;
  for (const auto& [stream, counts] : samples.retransmitted) total += counts.second - counts.first;
  return total;
}

TransferPercentiles percentiles_of(const std::vector<double>& values) {
  TransferPercentiles p;
  p.messages = values.size();
  if (values.empty()) return p;
  p.p50_s = base::percentile(values, 50);
  p.p90_s = base::percentile(values, 90);
  p.p99_s = base::percentile(values, 99);
  return p;
}

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

// Into `links`, by link, over the iterations from `first_iteration` on.
void add_side(const Plan& plan, const std::vector<TransferRecord>& transfers, int first_iteration,
              std::optional<TransferTimes> LinkTransfers::*side, std::map<std::string, LinkTransfers>& links) {
  std::map<std::string, Samples> samples;
  for (const TransferRecord& t : transfers) {
    if (t.iteration < first_iteration) continue;
    const std::string link = detail::wan_link_between(plan, t.worker, t.peer);
    if (link.empty()) continue;
    Samples& on_link = samples[link];
    on_link.transfer_s.push_back(seconds(t.last_received_ns - t.first_sent_ns));
    on_link.wait_s.push_back(seconds(t.first_sent_ns - t.queued_ns));
    for (const StreamAtStart& stream : t.streams) {
      const std::uint32_t count = stream.retransmitted;
      auto& [least, most] =
          on_link.retransmitted.try_emplace({t.worker, t.peer, stream.stream}, count, count).first->second;
      least = std::min(least, count);
      most = std::max(most, count);
    }
  }
  for (const auto& [link, values] : samples) {
    LinkTransfers& entry = links[link];
    entry.link = link;
    entry.*side =
        TransferTimes{percentiles_of(values.transfer_s), percentiles_of(values.wait_s), retransmitted_between(values)};
  }
}

}  // namespace

std::vector<LinkTransfers> summarize_transfers(const RunRecord& record) {
  const int first = detail::skipped_iterations(detail::iteration_count(record));
  std::map<std::string, LinkTransfers> links;
  if (record.runtime == kSimulatorRuntime) {
    add_side(record.plan, record.transfers, first, &LinkTransfers::simulated, links);
  } else {
    add_side(record.plan, record.transfers, first, &LinkTransfers::measured, links);
    add_side(record.plan, record.simulated_transfers, first, &LinkTransfers::simulated, links);
  }
  std::vector<LinkTransfers> out;
  for (auto& [link, entry] : links) out.push_back(std::move(entry));
  return out;
}

}  // namespace wanlab::harness
