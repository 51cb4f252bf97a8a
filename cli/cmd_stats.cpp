// `wanlab stats`: per directed DC pair counters from the data plane's maps.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "commands.hpp"
#include "json.hpp"
#include "options.hpp"
#include "wanlab/base/late_bounds.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::cli {
namespace em = wanlab::emulator;
namespace {

struct PairRow {
  std::string from, to;
  wanlab_pair_stats total{};
  double rate_bps = 0;       // over the last interval
  double qdelay_avg_ms = 0;  // over the last interval
  em::Datapath::PairAt set;  // what the data plane is set to now (its schedule's step)
};

// CLOCK_MONOTONIC, the data plane's clock (steady_clock is it on Linux).
std::uint64_t monotonic_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// "paused" for a scheduled pause, "-" for an unlimited link.
std::string rate_set_text(const em::Datapath::PairAt& set) {
  if (set.paused) return "paused";
  return set.config.rate_bps == 0 ? "-" : em::units::format_rate(set.config.rate_bps);
}

std::vector<PairRow> sample(const em::Datapath& datapath, const std::vector<std::string>& dcs,
                            std::vector<wanlab_pair_stats>& previous, double interval_s) {
  std::vector<PairRow> rows;
  const int n = static_cast<int>(dcs.size());
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      const wanlab_pair_stats now = datapath.stats(src, dst);
      wanlab_pair_stats& before = previous[static_cast<std::size_t>(src * n + dst)];
      if (src == dst && now.packets == 0) {
        before = now;
        continue;
      }
      PairRow row{dcs[static_cast<std::size_t>(src)], dcs[static_cast<std::size_t>(dst)], now, 0, 0, {}};
      const std::uint64_t packets = now.packets - before.packets;
      row.rate_bps = interval_s > 0 ? static_cast<double>(now.bytes - before.bytes) * 8 / interval_s : 0;
      row.set = datapath.pair_at(src, dst, monotonic_now_ns());
      row.qdelay_avg_ms =
          packets ? static_cast<double>(now.qdelay_sum_ns - before.qdelay_sum_ns) / static_cast<double>(packets) / 1e6
                  : 0;
      before = now;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

void print_table(const std::vector<PairRow>& rows, const std::optional<em::ReleaserStats>& releaser) {
  fmt::print("{:<24} {:>12} {:>14} {:>12} {:>12} {:>11} {:>11} {:>12} {:>12}\n", "PAIR", "PACKETS", "BYTES", "RATE NOW",
             "RATE SET", "DROP QUEUE", "DROP LOSS", "QDELAY AVG", "QDELAY MAX");
  for (const auto& row : rows) {
    fmt::print("{:<24} {:>12} {:>14} {:>12} {:>12} {:>11} {:>11} {:>10.3f}ms {:>10.3f}ms\n", row.from + " -> " + row.to,
               row.total.packets, row.total.bytes, em::units::format_rate(static_cast<std::uint64_t>(row.rate_bps)),
               rate_set_text(row.set) + (row.set.scheduled ? "*" : ""), row.total.drops[WANLAB_DROP_QUEUE],
               row.total.drops[WANLAB_DROP_LOSS], row.qdelay_avg_ms,
               static_cast<double>(row.total.qdelay_max_ns) / 1e6);
  }
  if (releaser) {
    const double packets = static_cast<double>(releaser->packets);
    fmt::print("releaser: {} verdicts, {} held now, lateness mean {:.1f} us, max {:.1f} us, {} over 100 us\n",
               releaser->packets, releaser->held,
               packets ? static_cast<double>(releaser->late_sum_ns) / packets / 1e3 : 0.0,
               static_cast<double>(releaser->late_max_ns) / 1e3, releaser->late_over[*base::late_bound_index(100'000)]);
  }
}

nlohmann::json to_json(const std::string& testbed, const std::vector<PairRow>& rows,
                       const std::optional<em::ReleaserStats>& releaser) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& row : rows) {
    pairs.push_back({{"from", row.from},
                     {"to", row.to},
                     {"packets", row.total.packets},
                     {"bytes", row.total.bytes},
                     {"rate_bps", row.rate_bps},
                     {"rate_set_bps", row.set.config.rate_bps},
                     {"rate_set_paused", row.set.paused},
                     {"scheduled", row.set.scheduled},
                     {"drops_queue", row.total.drops[WANLAB_DROP_QUEUE]},
                     {"drops_loss", row.total.drops[WANLAB_DROP_LOSS]},
                     {"qdelay_avg_ms", row.qdelay_avg_ms},
                     {"qdelay_max_ms", static_cast<double>(row.total.qdelay_max_ns) / 1e6}});
  }
  nlohmann::json out{{"testbed", testbed}, {"pairs", pairs}};
  // The counters under the names of the file's one format.
  if (releaser) {
    nlohmann::json& counters = out["releaser"] = nlohmann::json::object();
    for (const auto& [key, value] : em::releaser_counters(*releaser)) counters[std::string(key)] = value;
    nlohmann::json& by_pair = counters["pairs"] = nlohmann::json::array();
    for (const em::ReleaserStats::Pair& pair : releaser->pairs) {
      nlohmann::json& entry = by_pair.emplace_back(nlohmann::json{{"from", pair.from}, {"to", pair.to}});
      for (const auto& [key, value] : em::late_counters(pair)) entry[std::string(key)] = value;
    }
  }
  return out;
}

}  // namespace

int cmd_stats(const Options& options) {
  const double interval_s = options.decimal("interval", 0.01, 86400).value_or(1.0);
  const auto state = em::load_state(em::resolve_testbed(testbed_option(options)));
  const em::Datapath datapath = em::open_data_plane(state);
  std::vector<wanlab_pair_stats> previous(state.dcs.size() * state.dcs.size());
  sample(datapath, state.dcs, previous, 0);
  do {
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
    const auto rows = sample(datapath, state.dcs, previous, interval_s);
    const auto releaser = em::read_releaser_stats_if_present(em::releaser_stats_path(state.name));
    if (options.flag("json")) {
      print_json(to_json(state.name, rows, releaser));
    } else {
      print_table(rows, releaser);
      if (std::any_of(rows.begin(), rows.end(), [](const PairRow& row) { return row.set.scheduled; }))
        fmt::print(
            "* from the pair's schedule, at this moment; RATE NOW: what the data plane passed in the interval\n");
      if (options.flag("watch")) fmt::print("\n");
    }
    std::fflush(stdout);
  } while (options.flag("watch"));
  return 0;
}

}  // namespace wanlab::cli
