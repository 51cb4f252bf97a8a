// `wanlab whatif`'s sweep files (whatif.hpp): the file's reader, and each
// point's experiment and scenario, made by setting the axes' values in the
// parsed documents before the normal readers run.
#include "wanlab/harness/tools/whatif.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <sstream>

#include "experiment/text.hpp"
#include "experiment/toml_fields.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/input.hpp"
#include "wanlab/emulator/scenario_toml.hpp"
#include "wanlab/base/toml.hpp"

namespace wanlab::harness {
namespace {

using namespace std::string_view_literals;

constexpr std::array kTopKeys{"experiment"sv, "mode"sv, "labels"sv, "set"sv, "axes"sv};
constexpr std::string_view kTestbedPrefix = "testbed.";
constexpr std::size_t kMaxPoints = 100000;

struct Segment {
  std::string key;
  std::optional<std::size_t> index;  // "link[2]"
};

bool bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// "link[2]" -> {link, 2}; nullopt if it is not a bare key with an optional index.
std::optional<Segment> parse_segment(std::string_view text) {
  Segment segment;
  const std::size_t bracket = text.find('[');
  segment.key = std::string(text.substr(0, bracket));
  if (segment.key.empty() || !std::all_of(segment.key.begin(), segment.key.end(), bare_key_char)) return std::nullopt;
  if (bracket == std::string_view::npos) return segment;
  if (!text.ends_with(']')) return std::nullopt;
  const std::string_view digits = text.substr(bracket + 1, text.size() - bracket - 2);
  try {
    segment.index = static_cast<std::size_t>(base::parse_integer<std::uint32_t>(digits, 0, 1000000));
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return segment;
}

std::optional<std::vector<Segment>> parse_key_path(std::string_view path) {
  std::vector<Segment> segments;
  while (true) {
    const std::size_t dot = path.find('.');
    const auto segment = parse_segment(path.substr(0, dot));
    if (!segment) return std::nullopt;
    segments.push_back(*segment);
    if (dot == std::string_view::npos) return segments;
    path.remove_prefix(dot + 1);
  }
}

std::string position(const toml::source_region& region, const std::string& path) {
  return base::source_position(region, path);
}

// How a value is shown in points.csv, the table and the plots.
std::string value_label(const toml::node& node) {
  if (const auto* text = node.as_string()) return text->get();
  if (node.is_array() || node.is_table()) {
    std::ostringstream out;
    out << toml::toml_formatter(node, toml::format_flags::none);
    return out.str();
  }
  return base::describe_value(node);
}

class SweepReader {
 public:
  SweepReader(std::string text, std::string path) { sweep_.text = std::move(text), sweep_.path = std::move(path); }

  Sweep read() {
    toml::table root = parse();
    check_known_keys(root);
    read_experiment(root);
    read_mode(root);
    read_fixed(root);
    read_axes(root);
    check_size();
    read_labels(root);
    return std::move(sweep_);
  }

 private:
  [[noreturn]] void fail(const toml::source_region& region, std::string_view message) const {
    throw SweepError(fmt::format("{}: {}", position(region, sweep_.path), message));
  }

  toml::table parse() const {
    try {
      return toml::parse(sweep_.text, std::string_view(sweep_.path));
    } catch (const toml::parse_error& error) {
      fail(error.source(), base::one_line(error.description()));
    }
  }

  void check_known_keys(const toml::table& root) const {
    for (auto&& [key, node] : root) {
      if (std::find(kTopKeys.begin(), kTopKeys.end(), key.str()) == kTopKeys.end())
        fail(key.source(), fmt::format("unknown key {} in the top level{}", base::quoted(key.str()),
                                       detail::suggestion(key.str(), kTopKeys)));
    }
  }

  void read_experiment(const toml::table& root) {
    const toml::node* node = root.get("experiment");
    if (node == nullptr)
      throw SweepError(
          fmt::format(R"({}:1:1: missing required key "experiment" (the base experiment file))", sweep_.path));
    const auto* text = node->as_string();
    if (text == nullptr || text->get().empty())
      fail(node->source(), fmt::format("experiment: expected a path like \"../experiments/atlas-3dc.toml\", got {}",
                                       base::describe_value(*node)));
    sweep_.experiment_path = detail::resolve_beside(sweep_.path, text->get());
    std::error_code error;
    if (!std::filesystem::is_regular_file(sweep_.experiment_path, error))
      fail(node->source(),
           fmt::format("experiment: no experiment file at {}", base::quoted(sweep_.experiment_path, 256)));
  }

  void read_mode(const toml::table& root) {
    const toml::node* node = root.get("mode");
    if (node == nullptr) return;
    const auto* text = node->as_string();
    if (text != nullptr && text->get() == "grid") return;
    if (text != nullptr && text->get() == "zip") {
      sweep_.mode = SweepMode::zip;
      return;
    }
    fail(node->source(), fmt::format(R"(mode: expected "grid" or "zip", got {})", base::describe_value(*node)));
  }

  const toml::table* table_at(const toml::table& root, std::string_view name) const {
    const toml::node* node = root.get(name);
    if (node == nullptr) return nullptr;
    if (!node->is_table())
      fail(node->source(), fmt::format(R"({}: expected a table of key paths, like "parallel.dp" = ...)", name));
    return node->as_table();
  }

  // The entries of a table in file order, each key checked as a key path.
  std::vector<std::pair<const toml::key*, const toml::node*>> key_paths(const toml::table& table,
                                                                        std::string_view name) const {
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return detail::FieldReader::comes_before(*a.first, *b.first); });
    for (const auto& [key, node] : entries) {
      if (!parse_key_path(key->str()))
        fail(key->source(), fmt::format(R"({}: {} is not a key path like "parallel.dp" or "testbed.link[0].delay")",
                                        name, base::quoted(key->str())));
    }
    return entries;
  }

  void read_fixed(const toml::table& root) {
    const toml::table* table = table_at(root, "set");
    if (table == nullptr) return;
    for (const auto& [key, node] : key_paths(*table, "set")) sweep_.fixed.emplace_back(key->str());
  }

  void read_axes(const toml::table& root) {
    const toml::table* table = table_at(root, "axes");
    if (table == nullptr || table->empty())
      throw SweepError(fmt::format(R"({}: no [axes]: give at least one, like "parallel.dp" = [1, 2, 4])", sweep_.path));
    for (const auto& [key, node] : key_paths(*table, "axes")) {
      const toml::array* values = node->as_array();
      if (values == nullptr || values->empty())
        fail(node->source(), fmt::format("axes: {}: expected a list of one or more values, got {}", key->str(),
                                         values ? "an empty list" : base::describe_value(*node)));
      SweepAxis axis{std::string(key->str()), {}, position(key->source(), sweep_.path)};
      for (const toml::node& value : *values) axis.labels.push_back(value_label(value));
      sweep_.axes.push_back(std::move(axis));
    }
  }

  void check_size() const {
    std::size_t points = 1;
    for (const SweepAxis& axis : sweep_.axes) {
      if (sweep_.mode == SweepMode::zip && axis.labels.size() != sweep_.axes.front().labels.size())
        throw SweepError(fmt::format("{}: axes: {}: {} values, but {} has {}; zip takes lists of one length",
                                     axis.where, axis.key, axis.labels.size(), sweep_.axes.front().key,
                                     sweep_.axes.front().labels.size()));
      points = sweep_.mode == SweepMode::zip ? axis.labels.size() : points * axis.labels.size();
      if (points > kMaxPoints)
        throw SweepError(fmt::format("{}: axes: {} points; at most {}", axis.where, points, kMaxPoints));
    }
  }

  void read_labels(const toml::table& root) {
    const toml::node* node = root.get("labels");
    if (node == nullptr) return;
    if (sweep_.mode != SweepMode::zip)
      fail(node->source(), R"(labels: only with mode = "zip" (a grid's points are named by their values))");
    const toml::array* labels = node->as_array();
    if (labels == nullptr || labels->size() != sweep_.size())
      fail(node->source(),
           fmt::format("labels: expected a list of {} names, one per point, got {}", sweep_.size(),
                       labels ? fmt::format("{} entries", labels->size()) : base::describe_value(*node)));
    for (const toml::node& label : *labels) {
      if (!label.is_string())
        fail(label.source(), fmt::format("labels: expected a name, got {}", base::describe_value(label)));
      sweep_.labels.push_back(label.as_string()->get());
    }
  }

  Sweep sweep_;
};

// Sets `value` (moved, so it keeps its place in the sweep file) at the key
// path in `root`; tables on the way that do not exist are made, their keys
// placed at `key`'s position in the sweep file, so that a misspelt table is
// the reader's "unknown key" there.
void set_at(toml::table& root, const std::vector<Segment>& path, toml::node&& value, const toml::key& key,
            std::string_view document, const std::string& sweep_path) {
  auto fail = [&](std::string_view message) {
    throw SweepError(fmt::format("{}: {}: {}", position(key.source(), sweep_path), base::escaped(key.str()), message));
  };
  toml::table* table = &root;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const Segment& segment = path[i];
    const bool last = i + 1 == path.size();
    toml::node* child = table->get(segment.key);
    if (last && !segment.index) {
      table->insert_or_assign(toml::key(segment.key, key.source()), std::move(value));
      return;
    }
    if (child == nullptr && !segment.index) {
      child = &table->insert_or_assign(toml::key(segment.key, key.source()), toml::table{}).first->second;
    }
    if (segment.index) {
      toml::array* array = child ? child->as_array() : nullptr;
      if (array == nullptr) fail(fmt::format("{} in the {} is not a list", segment.key, document));
      if (*segment.index >= array->size())
        fail(fmt::format("{} in the {} has {} entries", segment.key, document, array->size()));
      if (last) {
        array->replace(array->cbegin() + static_cast<std::ptrdiff_t>(*segment.index), std::move(value));
        return;
      }
      child = array->get(*segment.index);
    }
    table = child->as_table();
    if (table == nullptr)
      fail(fmt::format("{} in the {} is {}, not a table", segment.key, document, base::describe_value(*child)));
  }
}

toml::table parse_document(const std::string& text, const std::string& path) {
  return toml::parse(text, std::string_view(path));  // read before; its errors are the reader's
}

// The point's value of each key, set in the experiment or the scenario document.
class PointBuilder {
 public:
  PointBuilder(const Sweep& sweep, std::size_t index) : sweep_(sweep), index_(index) {}

  SweepPoint build() {
    toml::table sweep_doc = parse_document(sweep_.text, sweep_.path);
    const std::string experiment_text =
        emulator::read_input_file<ExperimentError>(sweep_.experiment_path, "experiment");
    toml::table experiment = parse_experiment_text(experiment_text);
    std::vector<std::pair<const toml::key*, toml::node*>> scenario_values;
    for_each_value(sweep_doc, [&](const toml::key& key, toml::node& value) {
      if (key.str().starts_with(kTestbedPrefix)) {
        scenario_values.emplace_back(&key, &value);
      } else {
        if (key.str() == "testbed") resolve_testbed(value);
        set_at(experiment, *parse_key_path(key.str()), std::move(value), key, "experiment", sweep_.path);
      }
    });
    SweepPoint point{detail::parse_experiment_table(experiment, sweep_.experiment_path), {}};
    const std::string& scenario_path = point.experiment.testbed_path;
    std::string scenario_text = read_scenario(point.experiment);
    toml::table scenario = parse_document(scenario_text, scenario_path);
    for (auto& [key, value] : scenario_values) {
      set_at(scenario, *parse_key_path(key->str().substr(kTestbedPrefix.size())), std::move(*value), *key, "scenario",
             sweep_.path);
    }
    if (!scenario_values.empty()) {
      std::ostringstream out;
      out << scenario;
      scenario_text = out.str();
    }
    point.scenario = emulator::parse_scenario_table(scenario, scenario_path, std::move(scenario_text));
    return point;
  }

 private:
  toml::table parse_experiment_text(const std::string& text) const {
    try {
      return toml::parse(text, std::string_view(sweep_.experiment_path));
    } catch (const toml::parse_error& error) {
      throw ExperimentError(
          fmt::format("{}: {}", position(error.source(), sweep_.experiment_path), base::one_line(error.description())));
    }
  }

  static std::string read_scenario(const Experiment& experiment) {
    load_testbed(experiment);  // its errors: a missing file at the testbed key, a bad scenario at its line
    return emulator::read_input_file<emulator::ScenarioError>(experiment.testbed_path, "scenario");
  }

  // [set]'s values, then this point's value of each axis.
  template <typename Visit>
  void for_each_value(toml::table& sweep_doc, Visit visit) const {
    if (toml::table* fixed = sweep_doc["set"].as_table()) {
      for (const std::string& name : sweep_.fixed) visit(fixed->find(name)->first, fixed->find(name)->second);
    }
    toml::table& axes = *sweep_doc["axes"].as_table();
    const std::vector<std::size_t> at = sweep_.coordinates(index_);
    for (std::size_t a = 0; a < sweep_.axes.size(); ++a) {
      auto entry = axes.find(sweep_.axes[a].key);
      visit(entry->first, *entry->second.as_array()->get(at[a]));
    }
  }

  // A scenario path given in the sweep file is beside the sweep file.
  void resolve_testbed(toml::node& value) const {
    if (auto* text = value.as_string())
      text->get() = std::filesystem::absolute(detail::resolve_beside(sweep_.path, text->get())).string();
  }

  const Sweep& sweep_;
  std::size_t index_;
};

}  // namespace

std::size_t Sweep::size() const {
  if (axes.empty()) return 0;
  if (mode == SweepMode::zip) return axes.front().labels.size();
  std::size_t points = 1;
  for (const SweepAxis& axis : axes) points *= axis.labels.size();
  return points;
}

std::vector<std::size_t> Sweep::coordinates(std::size_t index) const {
  std::vector<std::size_t> at(axes.size(), index);
  if (mode == SweepMode::zip) return at;
  for (std::size_t a = axes.size(); a-- > 0;) {
    at[a] = index % axes[a].labels.size();
    index /= axes[a].labels.size();
  }
  return at;
}

std::string Sweep::describe(std::size_t index) const {
  const std::vector<std::size_t> at = coordinates(index);
  std::vector<std::string> parts;
  for (std::size_t a = 0; a < axes.size(); ++a)
    parts.push_back(fmt::format("{} = {}", axes[a].key, axes[a].labels[at[a]]));
  return detail::join(parts);
}

Sweep parse_sweep(std::string text, const std::string& path) { return SweepReader(std::move(text), path).read(); }

Sweep load_sweep(const std::string& path) {
  return parse_sweep(emulator::read_input_file<SweepError>(path, "sweep"), path);
}

SweepPoint make_point(const Sweep& sweep, std::size_t index) {
  try {
    return PointBuilder(sweep, index).build();
  } catch (const std::runtime_error& error) {  // SweepError, ExperimentError, ScenarioError
    throw SweepError(
        fmt::format("point {} of {} ({}): {}", index + 1, sweep.size(), sweep.describe(index), error.what()));
  }
}

}  // namespace wanlab::harness
