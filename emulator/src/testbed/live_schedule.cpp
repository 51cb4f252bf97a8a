// Live schedules (`wanlab set --schedule/--mahimahi/--no-schedule`,
// SCENARIO.md#schedules): loaded into the data plane and recorded in
// changes.toml, with a copy of the trace's bytes under the run directory
// (schedules/<at_mono_ns>.csv or .up), so that the record reads back exactly
// as it was loaded even when the file given to `set` is gone or changed.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <toml++/toml.h>
#include <utility>
#include <vector>

#include "scenario/scenario_reader.hpp"
#include "testbed/strict_toml.hpp"
#include "testbed/testbed_internal.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/units.hpp"

namespace fs = std::filesystem;

namespace wanlab::emulator {
namespace detail {
namespace {

constexpr std::string_view kCopies = "schedules";

// A copy's name as a change gives it: relative to the run directory, one
// file inside schedules/ ("schedules/123.csv").
bool is_copy_name(std::string_view name) {
  if (!name.starts_with(kCopies) || name.size() <= kCopies.size() + 1 || name[kCopies.size()] != '/') return false;
  const std::string_view file = name.substr(kCopies.size() + 1);
  return file.find('/') == std::string_view::npos && file != "." && file != "..";
}

// Before the schedule table is read: a trace it names must be one of our copies.
void check_copy_names(const StrictToml& file, const toml::node& schedule, const std::string& field) {
  const toml::table* table = schedule.as_table();
  if (table == nullptr) return;  // read_schedule_table says what is wrong with it
  for (std::string_view key : {"file", "mahimahi"}) {
    const toml::node* node = table->get(key);
    if (node == nullptr || node->as_string() == nullptr || is_copy_name(node->as_string()->get())) continue;
    file.fail(*node, fmt::format("{}.schedule.{}", field, key),
              fmt::format(R"(expected a copy in the run directory like "{}/123.csv", got {})", kCopies,
                          base::quoted(node->as_string()->get())));
  }
}

// The names the changes still give their copies.
std::set<std::string> copies_named(const toml::array& changes) {
  std::set<std::string> names;
  for (const toml::node& change : changes) {
    const auto schedule = (*change.as_table())["schedule"];
    for (const char* key : {"file", "mahimahi"})
      if (const auto name = schedule[key].value<std::string>()) names.insert(*name);
  }
  return names;
}

// Removes the copies no change names any more (those of superseded
// schedules, or of a `set` that failed before it recorded its change).
void remove_unnamed_copies(const TestbedState& state, const toml::array& changes) {
  const std::set<std::string> named = copies_named(changes);
  std::error_code ec;
  for (fs::directory_iterator it(run_dir(state.name) + "/" + std::string(kCopies), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = std::string(kCopies) + "/" + it->path().filename().string();
    if (named.count(name) == 0) fs::remove(it->path(), ec);
  }
}

// Writes the copy of the trace and returns the change's schedule table,
// as a scenario's schedule = { ... } names a trace.
toml::table keep_copy(const TestbedState& state, const LiveSchedule& live, std::uint64_t start) {
  make_directory(run_dir(state.name) + "/" + std::string(kCopies), 0700, true);
  const std::string name = fmt::format("{}/{}.{}", kCopies, start, live.mahimahi ? "up" : "csv");
  base::replace_file(run_dir(state.name) + "/" + name, live.text, 0600);
  if (live.mahimahi) return toml::table{{"mahimahi", name}, {"resolution", units::format_time(live.resolution_ns)}};
  toml::table table{{"file", name}};
  if (live.period_ns != 0) table.insert("period", units::format_time(live.period_ns));
  return table;
}

// The option that loaded `live`, for messages.
std::string option_of(const LiveSchedule& live) { return live.mahimahi ? "--mahimahi" : "--schedule"; }

// Each pair sends under the schedule at its rate now and at each rate an
// [[event]] still to come gives it (a schedule without a rate column shares
// the pair's rate).
void check_pairs_send(const TestbedState& state, const Scenario& scenario, const LiveSchedule& live,
                      const std::vector<std::pair<int, int>>& pairs) {
  if (!shares_pair_rate(live.schedule.columns)) return;  // finish_schedule checked it
  const std::uint64_t now = base::monotonic_ns();
  for (const auto& [src, dst] : pairs) {
    const std::string& from = state.dcs[static_cast<std::size_t>(src)];
    const std::string& to = state.dcs[static_cast<std::size_t>(dst)];
    PairParams pair = scenario.pair(src, dst);
    auto check = [&](const std::string& whose) {
      try {
        check_link_sends(live.schedule, make_pair_config(pair, 0, scenario.seed, 0));
      } catch (const std::invalid_argument& error) {
        throw ChangeRefused(
            fmt::format("{}: {}: {} -> {}{}: {}", option_of(live), live.schedule.where, from, to, whose, error.what()));
      }
    };
    check("");
    for (const Event& event : scenario.events) {
      if (!event.link.params.rate_bps || !event.link.matches(from, to) || event_due_mono_ns(state, event.at_ns) <= now)
        continue;
      pair.rate_bps = *event.link.params.rate_bps;
      check(fmt::format(" (its [[event]] at {})", units::format_time(event.at_ns)));
    }
  }
}

// The testbed's schedules once `live` replaces those of `pairs`: the maps
// the other pairs keep (each once, however many pairs share it) and its own.
void check_total_with(const Datapath& datapath, const LiveSchedule& live,
                      const std::vector<std::pair<int, int>>& pairs) {
  std::set<std::uint32_t> kept;
  std::uint64_t steps = live.schedule.steps.size();
  for (const Datapath::ScheduleMap& map : datapath.schedule_maps()) {
    if (std::find(pairs.begin(), pairs.end(), std::pair{map.src, map.dst}) != pairs.end()) continue;
    if (kept.insert(map.id).second) steps += map.head.steps;
  }
  try {
    check_schedule_total(steps);
  } catch (const std::invalid_argument& error) {
    throw ChangeRefused(fmt::format("{}: {}: {}", option_of(live), live.schedule.where, error.what()));
  }
}

}  // namespace

void read_change_schedule(const StrictToml& file, const toml::table& change, const std::string& field, LinkSpec& spec,
                          ScheduleFiles copies) {
  if (const toml::node* removes = change.get("no_schedule")) {
    const std::string name = field + ".no_schedule";
    if (change.contains("schedule")) file.fail(*removes, name, "give schedule or no_schedule, not both");
    if (!file.boolean(change, "no_schedule", name)) file.fail(*removes, name, "only true (a schedule removed)");
    spec.removes_schedule = true;
    return;
  }
  const toml::node* schedule = change.get("schedule");
  if (schedule == nullptr) return;
  check_copy_names(file, *schedule, field);
  spec.schedule = read_schedule_table(file, change, field, copies);
  spec.gives_schedule = true;
}

}  // namespace detail

using namespace detail;

LiveSchedule read_live_csv(const std::string& path, std::uint64_t period_ns) {
  LiveSchedule live;
  live.period_ns = period_ns;
  live.text = read_trace_file(path);
  live.schedule = parse_schedule_csv(live.text, path, period_ns);
  return live;
}

LiveSchedule read_live_mahimahi(const std::string& path, std::uint64_t resolution_ns) {
  LiveSchedule live;
  live.mahimahi = true;
  live.resolution_ns = resolution_ns;
  live.text = read_trace_file(path);
  live.schedule = parse_mahimahi_trace(live.text, path, resolution_ns);
  return live;
}

void set_schedule_live(const TestbedState& state, const Change& selection, const LiveSchedule* live) {
  const int from = dc_of_change(state, selection.from);
  const int to = dc_of_change(state, selection.to);
  std::vector<std::pair<int, int>> pairs{{from, to}};
  if (selection.symmetric) pairs.emplace_back(to, from);
  TestbedLock lock(state.name);
  // Reads the changes strictly: a broken file stops here, before anything changes.
  const Scenario scenario = current_scenario(state);
  Datapath datapath = open_data_plane(state);
  if (live) {
    check_pairs_send(state, scenario, *live, pairs);
    check_total_with(datapath, *live, pairs);
  }
  const std::uint64_t start = base::monotonic_ns();
  toml::table change{{"at_mono_ns", static_cast<std::int64_t>(start)},
                     {"from", selection.from},
                     {"to", selection.to},
                     {"symmetric", selection.symmetric}};
  if (live)
    change.insert("schedule", keep_copy(state, *live, start));
  else
    change.insert("no_schedule", true);
  const toml::array changes = record_change(state, std::move(change));
  if (live)
    datapath.set_schedule(pairs, schedule_entries(live->schedule, start));
  else
    for (const auto& [src, dst] : pairs) datapath.clear_schedule(src, dst);
  remove_unnamed_copies(state, changes);
}

}  // namespace wanlab::emulator
