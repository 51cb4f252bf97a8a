// Per-link order statistics of the transfers of a run, measured and simulated.
#include <map>

#include "record_internal.hpp"
#include "wanlab/base/stats.hpp"
#include "wanlab/harness/record.hpp"

namespace wanlab::harness {
namespace {

struct Samples {
  std::vector<double> transfer_s;
  std::vector<double> wait_s;
};

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
    samples[link].transfer_s.push_back(seconds(t.last_received_ns - t.first_sent_ns));
    samples[link].wait_s.push_back(seconds(t.first_sent_ns - t.queued_ns));
  }
  for (const auto& [link, values] : samples) {
    LinkTransfers& entry = links[link];
    entry.link = link;
    entry.*side = TransferTimes{percentiles_of(values.transfer_s), percentiles_of(values.wait_s)};
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
