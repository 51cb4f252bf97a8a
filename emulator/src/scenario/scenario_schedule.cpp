// A scenario's schedule tables (schedule.hpp, SCENARIO.md#schedules): a
// trace file (CSV or Mahimahi) or inline steps, read and checked with
// positions in the scenario file; and which schedule each DC pair runs.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "scenario_reader.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::emulator::detail {
namespace {

using namespace std::string_view_literals;
using base::describe_value;

constexpr std::array kScheduleKeys{"file"sv, "mahimahi"sv, "steps"sv, "period"sv, "resolution"sv};
constexpr std::array kStepKeys{"time"sv, "rate"sv, "delay"sv, "loss"sv, "share"sv};
constexpr std::uint64_t kDefaultResolutionNs = 1'000'000;

class ScheduleTable {
 public:
  ScheduleTable(const base::TomlReader& reader, ScheduleFiles files) : reader_(reader), files_(files) {}

  std::shared_ptr<const Schedule> read(const toml::table& parent, std::string_view owner) const {
    const toml::node* node = parent.get("schedule");
    if (node == nullptr) return nullptr;
    const std::string field = fmt::format("{}.schedule", owner);
    const toml::table* table = node->as_table();
    if (table == nullptr)
      reader_.fail(node->source(), fmt::format(R"({}: expected a table like {{ file = "trace.csv" }}, got {})", field,
                                               describe_value(*node)));
    reader_.check_known_keys(*table, kScheduleKeys, field);
    check_one_schedule_source(*table, field);
    std::optional<Schedule> schedule;
    if (table->contains("steps")) {
      check_not_there(*table, "resolution", field, "only for a mahimahi trace");
      schedule = read_inline_steps(*table->get("steps"), field, read_period(*table, field));
    } else if (table->contains("file")) {
      check_not_there(*table, "resolution", field, "only for a mahimahi trace");
      schedule = read_csv_file(*table->get("file"), field, read_period(*table, field));
    } else {
      check_not_there(*table, "period", field, "a Mahimahi trace repeats after its last time");
      schedule = read_mahimahi_file(*table, field);
    }
    if (!schedule) return nullptr;
    if (schedule->where.empty() || schedule->where == reader_.path()) schedule->where = reader_.where(table->source());
    return std::make_shared<const Schedule>(std::move(*schedule));
  }

  void check_one_schedule_source(const toml::table& table, std::string_view field) const {
    const toml::node* found = nullptr;
    for (std::string_view key : {"file"sv, "mahimahi"sv, "steps"sv}) {
      const toml::node* node = table.get(key);
      if (node == nullptr) continue;
      if (found != nullptr)
        reader_.fail(node->source(), fmt::format("{}: give one of file, mahimahi and steps", field));
      found = node;
    }
    if (found == nullptr)
      reader_.fail(table.source(), fmt::format(R"({}: needs file = "trace.csv", mahimahi = "trace.up" )"
                                               R"(or steps = [...])",
                                               field));
  }

  void check_not_there(const toml::table& table, std::string_view key, std::string_view field,
                       std::string_view why) const {
    if (const toml::node* node = table.get(key))
      reader_.fail(node->source(), fmt::format("{}.{}: {}", field, key, why));
  }

  std::uint64_t read_time_key(const toml::table& table, std::string_view key, std::string_view field,
                              std::uint64_t otherwise) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) return otherwise;
    const std::string name = fmt::format("{}.{}", field, key);
    const std::uint64_t ns = reader_.parse_string(*node, name, R"(a time like "1s")", units::parse_time);
    if (ns == 0) reader_.fail(node->source(), fmt::format("{}: must be greater than 0", name));
    return ns;
  }

  std::uint64_t read_period(const toml::table& table, std::string_view field) const {
    return read_time_key(table, "period", field, 0);
  }

  // The trace's path as the scenario names it: relative to the scenario's directory.
  std::string trace_path(const toml::node& node, std::string_view field) const {
    const std::string& name = reader_.expect_file_name(node, field, R"(a file name like "trace.csv")");
    if (name.front() == '/') return name;
    return (std::filesystem::path(reader_.path()).parent_path() / name).string();
  }

  std::string read_trace(const toml::node& node, const std::string& path, std::string_view field) const {
    try {
      return read_trace_file(path);
    } catch (const ScenarioError& error) {
      reader_.fail(node.source(), fmt::format("{}: {}", field, error.what()));
    }
  }

  std::optional<Schedule> read_csv_file(const toml::node& node, const std::string& field, std::uint64_t period) const {
    const std::string path = trace_path(node, field + ".file");
    if (files_ == ScheduleFiles::skip) return std::nullopt;
    return parse_schedule_csv(read_trace(node, path, field + ".file"), path, period);
  }

  std::optional<Schedule> read_mahimahi_file(const toml::table& table, const std::string& field) const {
    const toml::node& node = *table.get("mahimahi");
    const std::string path = trace_path(node, field + ".mahimahi");
    const std::uint64_t resolution = read_time_key(table, "resolution", field, kDefaultResolutionNs);
    if (files_ == ScheduleFiles::skip) return std::nullopt;
    return parse_mahimahi_trace(read_trace(node, path, field + ".mahimahi"), path, resolution);
  }

  // steps = [{ time = "0s", rate = "100mbit" }, ...]: every step gives the
  // columns the first one gives.
  Schedule read_inline_steps(const toml::node& node, const std::string& field, std::uint64_t period) const {
    const toml::array* array = node.as_array();
    if (array == nullptr || array->empty())
      reader_.fail(node.source(),
                   fmt::format(R"({}.steps: expected steps like [{{ time = "0s", rate = "100mbit" }}], got {})", field,
                               describe_value(node)));
    Schedule schedule;
    schedule.period_ns = period;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const std::string name = fmt::format("{}.steps[{}]", field, i);
      const toml::table* step = (*array)[i].as_table();
      if (step == nullptr)
        reader_.fail((*array)[i].source(),
                     fmt::format(R"({}: expected a table like {{ time = "0s", rate = "100mbit" }}, got {})", name,
                                 describe_value((*array)[i])));
      schedule.steps.push_back(read_inline_step(*step, name, i == 0 ? nullptr : &schedule.columns, schedule.columns));
    }
    try {
      finish_schedule(schedule);
    } catch (const ScheduleStepError& error) {
      reader_.fail((*array)[error.step()].source(), fmt::format("{}.steps[{}]: {}", field, error.step(), error.what()));
    } catch (const std::invalid_argument& error) {
      reader_.fail(node.source(), fmt::format("{}.steps: {}", field, error.what()));
    }
    return schedule;
  }

  // `expected`: the first step's columns, which this one must give too; null
  // for the first, whose columns go to `columns`.
  ScheduleStep read_inline_step(const toml::table& table, const std::string& name, const unsigned* expected,
                                unsigned& columns) const {
    reader_.check_known_keys(table, kStepKeys, name);
    if (!table.contains("time"))
      reader_.fail(table.source(), fmt::format(R"({}: missing time (e.g. time = "0s"))", name));
    ScheduleStep step;
    unsigned given = 0;
    for (std::string_view key : kStepKeys) {
      const toml::node* value = table.get(key);
      if (value == nullptr) continue;
      const unsigned column = schedule_column(key);
      given |= column;
      reader_.parse_string(*value, fmt::format("{}.{}", name, key), "a value with a unit",
                           [&](const std::string& text) {
                             set_schedule_cell(step, column, text);
                             return 0;
                           });
    }
    if (expected == nullptr) {
      if (given == 0)
        reader_.fail(table.source(), fmt::format("{}: sets nothing besides time (rate, delay, loss, share)", name));
      columns = given;
    } else if (given != *expected) {
      reader_.fail(table.source(),
                   fmt::format("{}: gives other columns than the first step; every step gives the same", name));
    }
    return step;
  }

 private:
  const base::TomlReader& reader_;
  ScheduleFiles files_;
};

}  // namespace

std::shared_ptr<const Schedule> read_schedule_table(const base::TomlReader& reader, const toml::table& parent,
                                                    std::string_view owner, ScheduleFiles files) {
  return ScheduleTable(reader, files).read(parent, owner);
}

}  // namespace wanlab::emulator::detail

namespace wanlab::emulator {

namespace {
// The last of `links` that gives or removes src -> dst's schedule, if any.
const LinkSpec* schedule_link(const Scenario& scenario, int src, int dst) {
  const Dc& src_dc = scenario.dcs.at(static_cast<std::size_t>(src));
  const Dc& dst_dc = scenario.dcs.at(static_cast<std::size_t>(dst));
  for (auto link = scenario.links.rbegin(); link != scenario.links.rend(); ++link)
    if ((link->gives_schedule || link->removes_schedule) && link->matches(src_dc.name, dst_dc.name)) return &*link;
  return nullptr;
}
}  // namespace

std::shared_ptr<const Schedule> Scenario::schedule(int src, int dst) const {
  if (src == dst) return nullptr;
  const LinkSpec* link = schedule_link(*this, src, dst);
  return link ? link->schedule : defaults_schedule;
}

bool Scenario::scheduled(int src, int dst) const {
  if (src == dst) return false;
  const LinkSpec* link = schedule_link(*this, src, dst);
  return link ? link->gives_schedule : defaults_schedule != nullptr;
}

std::vector<Scenario::SharedSchedule> Scenario::shared_schedules() const {
  std::vector<SharedSchedule> shared;
  const int n = static_cast<int>(dcs.size());
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      std::shared_ptr<const Schedule> found = schedule(src, dst);
      if (!found) continue;
      auto same = std::find_if(shared.begin(), shared.end(), [&](const SharedSchedule& known) {
        return known.schedule == found || known.schedule->same_steps(*found);
      });
      if (same == shared.end()) same = shared.insert(shared.end(), SharedSchedule{std::move(found), {}});
      same->pairs.emplace_back(src, dst);
    }
  }
  return shared;
}

}  // namespace wanlab::emulator
