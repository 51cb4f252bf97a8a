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

struct Counter {
  std::string_view key;
  std::uint64_t ReleaserStats::*field;
};

constexpr std::array kCounters{
    Counter{"packets", &ReleaserStats::packets},
    Counter{"held", &ReleaserStats::held},
    Counter{"late_sum_ns", &ReleaserStats::late_sum_ns},
    Counter{"late_max_ns", &ReleaserStats::late_max_ns},
    Counter{"late_over_10us", &ReleaserStats::late_over_10us},
    Counter{"late_over_100us", &ReleaserStats::late_over_100us},
    Counter{"late_over_300us", &ReleaserStats::late_over_300us},
    Counter{"late_over_1ms", &ReleaserStats::late_over_1ms},
    Counter{"late_over_3ms", &ReleaserStats::late_over_3ms},
    Counter{"late_over_10ms", &ReleaserStats::late_over_10ms},
    Counter{"queue_dropped", &ReleaserStats::queue_dropped},
    Counter{"user_dropped", &ReleaserStats::user_dropped},
};
constexpr auto kKeys = [] {
  std::array<std::string_view, kCounters.size()> keys{};
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = kCounters[i].key;
  return keys;
}();

constexpr std::size_t kMaxBytes = 4096;

}  // namespace

std::string releaser_stats_path(const std::string& testbed) { return run_dir(testbed) + "/releaser.toml"; }

std::vector<std::pair<std::string_view, std::uint64_t>> releaser_counters(const ReleaserStats& stats) {
  std::vector<std::pair<std::string_view, std::uint64_t>> counters;
  for (const Counter& counter : kCounters) counters.emplace_back(counter.key, stats.*counter.field);
  return counters;
}

std::string format_releaser_stats(const ReleaserStats& stats) {
  std::string text;
  for (const auto& [key, value] : releaser_counters(stats)) text += fmt::format("{} = {}\n", key, value);
  return text;
}

void write_releaser_stats(const std::string& path, const ReleaserStats& stats) {
  base::replace_file(path, format_releaser_stats(stats));
}

ReleaserStats read_releaser_stats(const std::string& path) {
  const detail::StrictToml file(path, kMaxBytes);
  file.only_keys(file.root(), kKeys, "releaser statistics");
  ReleaserStats stats;
  for (const Counter& counter : kCounters)
    stats.*counter.field = static_cast<std::uint64_t>(
        file.integer(file.root(), counter.key, counter.key, 0, std::numeric_limits<std::int64_t>::max()));
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
