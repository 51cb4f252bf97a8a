#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>
#include <toml++/toml.h>

#include "wanlab/base/clock.hpp"
#include "wanlab/base/parse.hpp"
#include "testbed/strict_toml.hpp"
#include "testbed/testbed_internal.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace fs = std::filesystem;

namespace wanlab::emulator {
using namespace detail;

namespace {

struct TimedSpec {
  std::uint64_t at_mono_ns;
  LinkSpec spec;
};

using namespace std::string_view_literals;

// A `set` every second for a day is about 9 MB: ample.
constexpr std::size_t kMaxChangesBytes = 32u << 20;
constexpr std::array kChangesKeys{"change"sv};
constexpr std::array kChangeKeys{"at_mono_ns"sv, "from"sv,     "to"sv,         "symmetric"sv,
                                 "fields"sv,     "schedule"sv, "no_schedule"sv};

std::string read_dc(const StrictToml& file, const toml::table& table, std::string_view key, const std::string& field,
                    const TestbedState& state) {
  std::string dc = file.string(table, key, field);
  if (std::find(state.dcs.begin(), state.dcs.end(), dc) == state.dcs.end())
    file.fail(*table.get(key), field, fmt::format("no DC {} in this testbed", base::quoted(dc)));
  return dc;
}

TimedSpec read_change(const StrictToml& file, const toml::node& node, std::size_t position, const TestbedState& state,
                      ScheduleFiles copies) {
  const std::string field = fmt::format("change[{}]", position);
  const toml::table& table = file.entry(node, field, kChangeKeys);
  TimedSpec timed;
  timed.at_mono_ns = static_cast<std::uint64_t>(file.integer(table, "at_mono_ns", field + ".at_mono_ns", 0, INT64_MAX));
  timed.spec.from = read_dc(file, table, "from", field + ".from", state);
  timed.spec.to = read_dc(file, table, "to", field + ".to", state);
  timed.spec.symmetric = file.boolean(table, "symmetric", field + ".symmetric");
  timed.spec.where = "wanlab set";
  const toml::node* fields = table.get("fields");
  if (fields != nullptr) {
    for (const auto& [key, value] : file.table(*fields, field + ".fields")) {
      const std::string name = fmt::format("{}.fields.{}", field, base::escaped(key.str()));
      try {
        timed.spec.params = parse_link_option(timed.spec.params, key.str(), file.string(value, name));
      } catch (const ScenarioError& error) {
        file.fail(value, name, error.what());
      }
    }
  }
  read_change_schedule(file, table, field, timed.spec, copies);
  const bool sets_fields = fields != nullptr && !fields->as_table()->empty();
  if (!sets_fields && !timed.spec.gives_schedule && !timed.spec.removes_schedule)
    file.fail(table, field, "changes nothing: give fields, schedule or no_schedule");
  return timed;
}

// Changes keep the CLI's own words ("200mbit") and are parsed again with the
// same function, so a change reads back exactly as it was given. Returns the
// changes and the file's table (empty when there is no file yet). The copies
// of live schedules' traces are read only with ScheduleFiles::read.
std::pair<std::vector<TimedSpec>, toml::table> read_changes(const TestbedState& state, ScheduleFiles copies) {
  std::vector<TimedSpec> changes;
  if (!fs::exists(changes_path(state.name))) return {changes, toml::table{{"change", toml::array{}}}};
  const StrictToml file(changes_path(state.name), kMaxChangesBytes);
  file.only_keys(file.root(), kChangesKeys, "changes");
  const toml::array& list = file.array(file.root(), "change", "change");
  for (std::size_t i = 0; i < list.size(); ++i) changes.push_back(read_change(file, list[i], i, state, copies));
  return {changes, file.root()};
}

// Drops the changes that later ones wholly override: every field a change sets,
// in every direction it covers, is set again by a later change. Links overlay
// field by field in time order (Scenario::pair), so what remains gives the
// same settings at any time from the latest change on, [[event]]s included
// (they are not in this file and stay in time order with what remains).
// Without it every `set` re-reads every change ever made: in the soak
// benchmark a `set` took 14 ms of CPU with 20 changes recorded and 69 ms with
// 1,640, and a `set` a second outgrows a second within hours.
void drop_overridden(toml::array& changes) {
  using Target = std::tuple<std::string, std::string, std::string>;  // from, to, field
  std::set<Target> covered;
  for (std::size_t i = changes.size(); i-- > 0;) {
    const toml::table& change = *changes[i].as_table();
    const std::string from = change["from"].value_or(""), to = change["to"].value_or("");
    // A live schedule, given or removed, is one field: the later one replaces it.
    std::vector<std::string> fields;
    if (const toml::table* set = change["fields"].as_table())
      for (const auto& [field, value] : *set) fields.emplace_back(field.str());
    if (change.contains("schedule") || change.contains("no_schedule")) fields.emplace_back("schedule");
    std::vector<Target> targets;
    for (const std::string& field : fields) {
      targets.emplace_back(from, to, field);
      if (change["symmetric"].value_or(false)) targets.emplace_back(to, from, field);
    }
    if (std::all_of(targets.begin(), targets.end(), [&](const Target& target) { return covered.count(target) > 0; })) {
      changes.erase(changes.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      covered.insert(targets.begin(), targets.end());
    }
  }
}

void refresh_locked(const TestbedState& state) {
  const Scenario scenario = current_scenario(state);
  Datapath datapath = open_data_plane(state);
  write_pairs(datapath, scenario);
}

}  // namespace

namespace detail {

TestbedLock::TestbedLock(const std::string& testbed)
    : fd_(::open((run_dir(testbed) + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) {
  if (!fd_) base::throw_errno(testbed + ": opening lock file");
  base::check(::flock(fd_.get(), LOCK_EX), testbed + ": locking");
}

toml::array record_change(const TestbedState& state, toml::table change) {
  toml::table root = read_changes(state, ScheduleFiles::skip).second;
  toml::array& changes = *root["change"].as_array();
  changes.push_back(std::move(change));
  drop_overridden(changes);
  std::ostringstream text;
  text << root << "\n";
  base::replace_file(changes_path(state.name), text.str(), 0600);
  return changes;
}

}  // namespace detail

std::uint64_t event_due_mono_ns(const TestbedState& state, std::uint64_t at_ns) {
  const std::uint64_t due = state.created_mono_ns + at_ns;
  return due < at_ns ? UINT64_MAX : due;
}

Scenario current_scenario(const TestbedState& state, ScheduleFiles copies) {
  return scenario_now(state, load_scenario(state.scenario_path, ScheduleFiles::skip), true, copies);
}

Scenario scenario_now(const TestbedState& state, Scenario scenario, bool with_changes, ScheduleFiles copies) {
  std::vector<TimedSpec> timeline;
  const std::uint64_t now = base::monotonic_ns();
  for (const Event& event : scenario.events) {
    const std::uint64_t due = event_due_mono_ns(state, event.at_ns);
    if (due <= now) timeline.push_back({due, event.link});
  }
  if (with_changes)
    for (auto& change : read_changes(state, copies).first) timeline.push_back(std::move(change));
  std::stable_sort(timeline.begin(), timeline.end(),
                   [](const TimedSpec& a, const TimedSpec& b) { return a.at_mono_ns < b.at_mono_ns; });
  for (auto& timed : timeline) scenario.links.push_back(std::move(timed.spec));
  return scenario;
}

int detail::dc_of_change(const TestbedState& state, const std::string& dc) {
  const auto found = std::find(state.dcs.begin(), state.dcs.end(), dc);
  if (found == state.dcs.end())
    throw std::runtime_error(
        fmt::format("{}: no DC {} (DCs: {})", state.name, base::quoted(dc), fmt::join(state.dcs, ", ")));
  return static_cast<int>(found - state.dcs.begin());
}

namespace {

// A new rate must leave each pair's schedule, as the data plane holds it,
// something to send (one that shares the pair's rate; the others give their
// own). Only the change's pairs, and only their map's head unless it shares.
void check_schedules_send_at(const TestbedState& state, const Change& change, const LinkParams& checked) {
  const Scenario scenario = current_scenario(state);
  const Datapath datapath = open_data_plane(state);
  std::vector<std::pair<int, int>> pairs{{dc_of_change(state, change.from), dc_of_change(state, change.to)}};
  if (change.symmetric) pairs.emplace_back(pairs[0].second, pairs[0].first);
  for (const auto& [src, dst] : pairs) {
    const std::optional<Datapath::ScheduleMap> map = datapath.schedule_map(src, dst);
    if (!map || !shares_pair_rate(map->head.columns)) continue;
    PairParams pair = scenario.pair(src, dst);
    pair.apply(checked);
    try {
      check_link_sends(datapath.schedule(src, dst), make_pair_config(pair, 0, scenario.seed, 0));
    } catch (const std::invalid_argument& error) {
      throw ChangeRefused(fmt::format("--rate: {} -> {}: its schedule: {}", state.dcs[static_cast<std::size_t>(src)],
                                      state.dcs[static_cast<std::size_t>(dst)], error.what()));
    }
  }
}

}  // namespace

void apply_change(const TestbedState& state, const Change& change) {
  for (const auto& dc : {change.from, change.to}) dc_of_change(state, dc);
  LinkParams checked;
  for (const auto& [field, value] : change.fields) checked = parse_link_option(checked, field, value);

  TestbedLock lock(state.name);
  if (checked.rate_bps) check_schedules_send_at(state, change, checked);
  toml::table fields;
  for (const auto& [field, value] : change.fields) fields.insert_or_assign(field, value);
  record_change(state, toml::table{{"at_mono_ns", static_cast<std::int64_t>(base::monotonic_ns())},
                                   {"from", change.from},
                                   {"to", change.to},
                                   {"symmetric", change.symmetric},
                                   {"fields", fields}});
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
      wanlab_pair_config config =
          make_pair_config(forward, rtt, scenario.seed, static_cast<std::uint32_t>(src * n + dst));
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

void write_schedules(Datapath& datapath, const Scenario& scenario, std::uint64_t start_ns) {
  for (const Scenario::SharedSchedule& shared : scenario.shared_schedules())
    datapath.set_schedule(shared.pairs, schedule_entries(*shared.schedule, start_ns));
}

}  // namespace wanlab::emulator
