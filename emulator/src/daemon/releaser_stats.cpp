// releaser.toml: the releaser's counters between the daemon and its readers.
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <limits>
#include <sstream>

#include "testbed/strict_toml.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {
namespace {

template <class Counts>
struct Counter {
  std::string_view key;
  std::uint64_t Counts::*field;
};

// The lateness counters: the whole queue's (at the top of the file) and each pair's.
constexpr std::array kLateCounters{
    Counter<LateCounts>{"packets", &LateCounts::packets},
    Counter<LateCounts>{"late_max_ns", &LateCounts::late_max_ns},
    Counter<LateCounts>{"late_over_10us", &LateCounts::late_over_10us},
    Counter<LateCounts>{"late_over_100us", &LateCounts::late_over_100us},
    Counter<LateCounts>{"late_over_300us", &LateCounts::late_over_300us},
    Counter<LateCounts>{"late_over_1ms", &LateCounts::late_over_1ms},
    Counter<LateCounts>{"late_over_3ms", &LateCounts::late_over_3ms},
    Counter<LateCounts>{"late_over_10ms", &LateCounts::late_over_10ms},
};
// What only the whole queue counts.
constexpr std::array kQueueCounters{
    Counter<ReleaserStats>{"held", &ReleaserStats::held},
    Counter<ReleaserStats>{"late_sum_ns", &ReleaserStats::late_sum_ns},
    Counter<ReleaserStats>{"queue_dropped", &ReleaserStats::queue_dropped},
    Counter<ReleaserStats>{"user_dropped", &ReleaserStats::user_dropped},
};

constexpr auto kPairKeys = [] {
  std::array<std::string_view, kLateCounters.size() + 2> keys{"from", "to"};
  for (std::size_t i = 0; i < kLateCounters.size(); ++i) keys[i + 2] = kLateCounters[i].key;
  return keys;
}();
constexpr auto kRootKeys = [] {
  std::array<std::string_view, kLateCounters.size() + kQueueCounters.size() + 1> keys{};
  for (std::size_t i = 0; i < kLateCounters.size(); ++i) keys[i] = kLateCounters[i].key;
  for (std::size_t i = 0; i < kQueueCounters.size(); ++i) keys[kLateCounters.size() + i] = kQueueCounters[i].key;
  keys.back() = "pair";
  return keys;
}();

// 64 DCs' pairs, each about 250 bytes.
constexpr std::size_t kMaxBytes = 1 << 20;

std::string quoted(const std::string& text) {
  std::ostringstream out;
  out << toml::value<std::string>(text);
  return out.str();
}

}  // namespace

std::string releaser_stats_path(const std::string& testbed) { return run_dir(testbed) + "/releaser.toml"; }

std::vector<std::pair<std::string_view, std::uint64_t>> releaser_counters(const ReleaserStats& stats) {
  std::vector<std::pair<std::string_view, std::uint64_t>> counters;
  const LateCounts& late = stats;
  for (const auto& counter : kLateCounters) counters.emplace_back(counter.key, late.*counter.field);
  for (const auto& counter : kQueueCounters) counters.emplace_back(counter.key, stats.*counter.field);
  return counters;
}

std::string format_releaser_stats(const ReleaserStats& stats) {
  std::string text;
  for (const auto& [key, value] : releaser_counters(stats)) text += fmt::format("{} = {}\n", key, value);
  for (const ReleaserStats::Pair& pair : stats.pairs) {
    if (pair.packets == 0) continue;
    text += fmt::format("\n[[pair]]\nfrom = {}\nto = {}\n", quoted(pair.from), quoted(pair.to));
    for (const auto& counter : kLateCounters) text += fmt::format("{} = {}\n", counter.key, pair.*counter.field);
  }
  return text;
}

void write_releaser_stats(const std::string& path, const ReleaserStats& stats) {
  base::replace_file(path, format_releaser_stats(stats));
}

ReleaserStats read_releaser_stats(const std::string& path) {
  const detail::StrictToml file(path, kMaxBytes);
  file.only_keys(file.root(), kRootKeys, "releaser statistics");
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  ReleaserStats stats;
  LateCounts& late = stats;
  for (const auto& counter : kLateCounters)
    late.*counter.field = static_cast<std::uint64_t>(file.integer(file.root(), counter.key, counter.key, 0, kMax));
  for (const auto& counter : kQueueCounters)
    stats.*counter.field = static_cast<std::uint64_t>(file.integer(file.root(), counter.key, counter.key, 0, kMax));
  if (!file.root().contains("pair")) return stats;
  for (const toml::node& node : file.array(file.root(), "pair", "pair")) {
    const toml::table& entry = file.entry(node, "pair", kPairKeys);
    ReleaserStats::Pair pair;
    pair.from = file.string(entry, "from", "pair.from");
    pair.to = file.string(entry, "to", "pair.to");
    for (const auto& counter : kLateCounters)
      pair.*counter.field = static_cast<std::uint64_t>(file.integer(entry, counter.key, counter.key, 0, kMax));
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
