#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <toml++/toml.h>

#include "testbed_internal.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/sys.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace fs = std::filesystem;

namespace wanlab::emulator {
using namespace detail;

namespace {

struct TimedSpec {
  std::uint64_t at_mono_ns;
  LinkSpec spec;
};

// Changes keep the CLI's own words ("200mbit") and are parsed again with the
// same function, so a change reads back exactly as it was given.
std::vector<TimedSpec> read_changes(const std::string& testbed) {
  std::vector<TimedSpec> changes;
  if (!fs::exists(changes_path(testbed))) return changes;
  const toml::table root = toml::parse_file(changes_path(testbed));
  if (const auto* list = root["change"].as_array()) {
    for (const auto& node : *list) {
      const auto& t = *node.as_table();
      TimedSpec timed;
      timed.at_mono_ns = static_cast<std::uint64_t>(t["at_mono_ns"].value_or(std::int64_t{0}));
      timed.spec.from = t["from"].value_or(std::string{});
      timed.spec.to = t["to"].value_or(std::string{});
      timed.spec.symmetric = t["symmetric"].value_or(false);
      timed.spec.where = "wanlab set";
      if (const auto* fields = t["fields"].as_table())
        for (const auto& [key, value] : *fields)
          timed.spec.params = parse_link_option(timed.spec.params, key.str(), value.value_or(std::string{}));
      changes.push_back(std::move(timed));
    }
  }
  return changes;
}

// Serializes writers of the changes file and of the data plane's pairs.
class TestbedLock {
 public:
  explicit TestbedLock(const std::string& testbed)
      : fd_(::open((run_dir(testbed) + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (!fd_) throw_errno(testbed + ": opening lock file");
    check(::flock(fd_.get(), LOCK_EX), testbed + ": locking");
  }

 private:
  UniqueFd fd_;
};

void refresh_locked(const TestbedState& state) {
  const Scenario scenario = current_scenario(state);
  Datapath datapath = Datapath::open_pinned(bpffs_dir(state.name));
  write_pairs(datapath, scenario);
}

}  // namespace

Scenario current_scenario(const TestbedState& state) {
  Scenario scenario = load_scenario(state.scenario_path);
  std::vector<TimedSpec> timeline;
  const std::uint64_t now = monotonic_ns();
  for (const Event& event : scenario.events)
    if (state.created_mono_ns + event.at_ns <= now) timeline.push_back({state.created_mono_ns + event.at_ns, event.link});
  for (auto& change : read_changes(state.name)) timeline.push_back(std::move(change));
  std::stable_sort(timeline.begin(), timeline.end(),
                   [](const TimedSpec& a, const TimedSpec& b) { return a.at_mono_ns < b.at_mono_ns; });
  for (auto& timed : timeline) scenario.links.push_back(std::move(timed.spec));
  return scenario;
}

void apply_change(const TestbedState& state, const Change& change) {
  for (const auto& dc : {change.from, change.to}) {
    if (std::find(state.dcs.begin(), state.dcs.end(), dc) == state.dcs.end())
      throw std::runtime_error(fmt::format("{}: no DC \"{}\" (DCs: {})", state.name, dc, fmt::join(state.dcs, ", ")));
  }
  LinkParams checked;
  for (const auto& [field, value] : change.fields) checked = parse_link_option(checked, field, value);

  TestbedLock lock(state.name);
  toml::table root;
  if (fs::exists(changes_path(state.name))) root = toml::parse_file(changes_path(state.name));
  if (!root.contains("change")) root.insert("change", toml::array{});
  toml::table fields;
  for (const auto& [field, value] : change.fields) fields.insert_or_assign(field, value);
  root["change"].as_array()->push_back(toml::table{{"at_mono_ns", static_cast<std::int64_t>(monotonic_ns())},
                                                   {"from", change.from},
                                                   {"to", change.to},
                                                   {"symmetric", change.symmetric},
                                                   {"fields", fields}});
  {
    std::ofstream out(changes_path(state.name) + ".tmp");
    out << root << "\n";
  }
  fs::rename(changes_path(state.name) + ".tmp", changes_path(state.name));
  refresh_locked(state);
}

void refresh_data_plane(const TestbedState& state) {
  TestbedLock lock(state.name);
  refresh_locked(state);
}

void write_pairs(Datapath& datapath, const Scenario& scenario) {
  const int n = static_cast<int>(scenario.dcs.size());
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      const PairParams forward = scenario.pair(src, dst);
      const std::uint64_t rtt = forward.delay_ns + scenario.pair(dst, src).delay_ns;
      wanlab_pair_config config = make_pair_config(forward, rtt, scenario.seed, static_cast<std::uint32_t>(src * n + dst));
      // Keep the running generation so a live change does not reset the pair's state.
      const wanlab_pair_config running = datapath.pair(src, dst);
      if (running.generation != 0) {
        config.generation = running.generation;
        config.seed = running.seed;
      }
      datapath.set_pair(src, dst, config);
    }
  }
}

}  // namespace wanlab::emulator
