// releaser.toml: the releaser's counters between the daemon and its readers.
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "testbed/strict_toml.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/late_bounds.hpp"
#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {
namespace {

// The lateness counters, the whole queue's (at the top of the file) and each
// pair's, by name: packets, late_max_ns, then late_over_<bound> for each of
// base::kLateBoundsNs. The names live as long as the program (string_views
// into them are handed out).
const std::vector<std::string>& late_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> names{"packets", "late_max_ns"};
    for (const std::uint64_t bound : base::kLateBoundsNs) names.push_back("late_over_" + base::late_bound_key(bound));
    return names;
  }();
  return keys;
}

// The counter `late_keys()[i]` names (of a const or a mutable LateCounts).
template <class Counts>
auto& late_counter(Counts& counts, std::size_t i) {
  if (i == 0) return counts.packets;
  if (i == 1) return counts.late_max_ns;
  return counts.late_over[i - 2];
}

// What only the whole queue counts.
struct QueueCounter {
  std::string_view key;
  std::uint64_t ReleaserStats::*field;
};
constexpr std::array kQueueCounters{
    QueueCounter{"held", &ReleaserStats::held},
    QueueCounter{"late_sum_ns", &ReleaserStats::late_sum_ns},
    QueueCounter{"queue_dropped", &ReleaserStats::queue_dropped},
    QueueCounter{"user_dropped", &ReleaserStats::user_dropped},
};

std::vector<std::string_view> pair_keys() {
  std::vector<std::string_view> keys{"from", "to"};
  keys.insert(keys.end(), late_keys().begin(), late_keys().end());
  return keys;
}
std::vector<std::string_view> root_keys() {
  std::vector<std::string_view> keys(late_keys().begin(), late_keys().end());
  for (const auto& counter : kQueueCounters) keys.push_back(counter.key);
  keys.push_back("pair");
  return keys;
}

// 64 DCs' pairs, each about 800 bytes.
constexpr std::size_t kMaxBytes = 4 << 20;

std::string quoted(const std::string& text) {
  std::ostringstream out;
  out << toml::value<std::string>(text);
  return out.str();
}

}  // namespace

std::string releaser_stats_path(const std::string& testbed) { return run_dir(testbed) + "/releaser.toml"; }

std::vector<std::pair<std::string_view, std::uint64_t>> late_counters(const LateCounts& counts) {
  std::vector<std::pair<std::string_view, std::uint64_t>> counters;
  for (std::size_t i = 0; i < late_keys().size(); ++i) counters.emplace_back(late_keys()[i], late_counter(counts, i));
  return counters;
}

std::vector<std::pair<std::string_view, std::uint64_t>> releaser_counters(const ReleaserStats& stats) {
  std::vector<std::pair<std::string_view, std::uint64_t>> counters = late_counters(stats);
  for (const auto& counter : kQueueCounters) counters.emplace_back(counter.key, stats.*counter.field);
  return counters;
}

std::string format_releaser_stats(const ReleaserStats& stats) {
  std::string text;
  for (const auto& [key, value] : releaser_counters(stats)) text += fmt::format("{} = {}\n", key, value);
  for (const ReleaserStats::Pair& pair : stats.pairs) {
    if (pair.packets == 0) continue;
    text += fmt::format("\n[[pair]]\nfrom = {}\nto = {}\n", quoted(pair.from), quoted(pair.to));
    for (const auto& [key, value] : late_counters(pair)) text += fmt::format("{} = {}\n", key, value);
  }
  return text;
}

void write_releaser_stats(const std::string& path, const ReleaserStats& stats) {
  base::replace_file(path, format_releaser_stats(stats));
}

ReleaserStats read_releaser_stats(const std::string& path) {
  const detail::StrictToml file(path, kMaxBytes);
  file.only_keys(file.root(), root_keys(), "releaser statistics");
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  ReleaserStats stats;
  LateCounts& late = stats;
  for (std::size_t i = 0; i < late_keys().size(); ++i) {
    const std::string& key = late_keys()[i];
    late_counter(late, i) = static_cast<std::uint64_t>(file.integer(file.root(), key, key, 0, kMax));
  }
  for (const auto& counter : kQueueCounters)
    stats.*counter.field = static_cast<std::uint64_t>(file.integer(file.root(), counter.key, counter.key, 0, kMax));
  if (!file.root().contains("pair")) return stats;
  const std::vector<std::string_view> known_pair_keys = pair_keys();
  for (const toml::node& node : file.array(file.root(), "pair", "pair")) {
    const toml::table& entry = file.entry(node, "pair", known_pair_keys);
    ReleaserStats::Pair pair;
    pair.from = file.string(entry, "from", "pair.from");
    pair.to = file.string(entry, "to", "pair.to");
    for (std::size_t i = 0; i < late_keys().size(); ++i) {
      const std::string& key = late_keys()[i];
      late_counter(pair, i) = static_cast<std::uint64_t>(file.integer(entry, key, key, 0, kMax));
    }
    stats.pairs.push_back(std::move(pair));
  }
  return stats;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> nfqueue_drops(std::string_view proc_text,
                                                                     std::uint16_t queue_num) {
  std::istringstream lines{std::string(proc_text)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::uint64_t number = 0, portid = 0, total = 0, copy_mode = 0, copy_range = 0, queue_dropped = 0, user_dropped = 0;
    if (!(fields >> number >> portid >> total >> copy_mode >> copy_range >> queue_dropped >> user_dropped)) continue;
    if (number == queue_num) return std::pair{queue_dropped, user_dropped};
  }
  return std::nullopt;
}

std::optional<ReleaserStats> read_releaser_stats_if_present(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) return std::nullopt;
  return read_releaser_stats(path);
}

}  // namespace wanlab::emulator
