// The experiment's command-line overrides: one table (experiment_options()),
// read by apply_override and offered by `wanlab train`.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "experiment/diloco_config.hpp"
#include "experiment/experiment_internal.hpp"
#include "experiment/prefill_config.hpp"
#include "experiment/text.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/units.hpp"
#include "wanlab/harness/experiment/experiment.hpp"

namespace wanlab::harness {
namespace {

using namespace detail;

// "--temporal-sharing" / "temporal_sharing" -> "temporal-sharing".
std::string normalize_option(std::string_view option) {
  if (option.substr(0, 2) == "--") option.remove_prefix(2);
  std::string name(option);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

// A number from the command line, strictly (wanlab::base); errors keep the option.
template <typename Parse>
auto parse_number(std::string_view flag, Parse parse) {
  try {
    return parse();
  } catch (const base::ParseError& error) {
    throw ExperimentError(fmt::format("{}: {}", flag, error.what()));
  }
}

bool parse_on_off(std::string_view flag, std::string_view value) {
  if (value == "on" || value == "true") return true;
  if (value == "off" || value == "false") return false;
  throw ExperimentError(fmt::format("{}: expected on or off, got {}", flag, base::quoted(value)));
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> parts;
  while (true) {
    std::size_t comma = text.find(',');
    parts.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return parts;
    text.remove_prefix(comma + 1);
  }
}

void set_schedule(Experiment& experiment, const std::string& flag, std::string_view value) {
  std::optional<Schedule> schedule = schedule_named(value);
  if (!schedule) {
    throw ExperimentError(fmt::format("{}: expected gpipe, 1f1b, atlas, diloco or streaming-diloco, got {}{}", flag,
                                      base::quoted(value), suggestion(value, kScheduleNames)));
  }
  experiment.schedule = *schedule;
  experiment.positions["schedule"] = flag;
  apply_schedule_defaults(experiment);
}

void set_placement(Experiment& experiment, const std::string& flag, std::string_view value) {
  experiment.placement_given = true;
  experiment.positions["placement"] = flag;
  if (std::optional<Placement> placement = placement_named(value)) {
    experiment.placement = *placement;
    experiment.placement_dcs.clear();
    return;
  }
  std::vector<std::string> dcs = split_commas(value);
  if (dcs.size() == 1) {
    throw ExperimentError(
        fmt::format(R"({}: expected atlas, pp-across-dc, dp-across-dc or DCs like "east,east,west,west", got {}{})",
                    flag, base::quoted(value), suggestion(value, kPlacementNames)));
  }
  for (std::size_t stage = 0; stage < dcs.size(); ++stage) {
    if (dcs[stage].empty()) throw ExperimentError(fmt::format("{}: empty DC name at {}", flag, stage));
    experiment.positions[fmt::format("placement[{}]", stage)] = flag;
  }
  experiment.placement = Placement::explicit_list;
  experiment.placement_dcs = std::move(dcs);
}

void set_streams(Experiment& experiment, const std::string& flag, std::string_view value) {
  experiment.streams = parse_number(flag, [&] { return base::parse_integer(value, 1, kMaxStreams); });
  experiment.streams_given = true;
  experiment.positions["streams"] = flag;
}

void set_temporal_sharing(Experiment& experiment, const std::string& flag, std::string_view value) {
  experiment.temporal_sharing = parse_on_off(flag, value);
  experiment.temporal_sharing_given = true;
  experiment.positions["temporal_sharing"] = flag;
}

void set_pacing(Experiment& experiment, const std::string& flag, std::string_view value) {
  experiment.pacing = parse_on_off(flag, value);
  experiment.positions["pacing"] = flag;
}

void set_reorder_dcs(Experiment& experiment, const std::string& flag, std::string_view value) {
  experiment.reorder_dcs = parse_on_off(flag, value);
  experiment.positions["reorder_dcs"] = flag;
}

void set_iterations(Experiment& experiment, const std::string& flag, std::string_view value) {
  experiment.iterations = parse_number(flag, [&] { return base::parse_integer(value, 1, kMaxIterations); });
  experiment.positions["iterations"] = flag;
}

void set_scale(Experiment& experiment, const std::string& flag, std::string_view value) {
  experiment.scale = parse_number(flag, [&] { return base::parse_decimal(value, kMinScale, 1.0); });
  experiment.positions["scale"] = flag;
}

void set_wan_start(Experiment& experiment, const std::string& flag, std::string_view value) {
  std::uint64_t ns = 0;
  try {
    ns = emulator::units::parse_time(value);
  } catch (const std::invalid_argument& error) {
    throw ExperimentError(fmt::format("{}: {}", flag, error.what()));
  }
  if (ns > kMaxWanStartNs)
    throw ExperimentError(fmt::format("{}: expected a time from 0s to {}, got {}", flag,
                                      emulator::units::format_time(kMaxWanStartNs), base::quoted(value)));
  experiment.wan_start_ns = ns;
  experiment.positions["wan_start"] = flag;
}

void set_inner_steps(Experiment& experiment, const std::string& flag, std::string_view value) {
  override_diloco(experiment, flag, "inner_steps", value);
}

void set_fragments(Experiment& experiment, const std::string& flag, std::string_view value) {
  override_diloco(experiment, flag, "fragments", value);
}

void set_outer_bits(Experiment& experiment, const std::string& flag, std::string_view value) {
  override_diloco(experiment, flag, "outer_bits", value);
}

void set_overlap_steps(Experiment& experiment, const std::string& flag, std::string_view value) {
  override_diloco(experiment, flag, "overlap_steps", value);
}

void set_prefill(Experiment& experiment, const std::string& flag, std::string_view value) {
  override_prefill(experiment, flag, parse_on_off(flag, value));
}

constexpr std::array kOptions{
    ExperimentOption{"pipeline", "gpipe|1f1b|atlas|diloco|streaming-diloco",
                     "the training schedule (re-derives what it implies)", set_schedule},
    // The old name, kept: `wanlab set --schedule` loads a link's schedule.
    ExperimentOption{"schedule", "S", "the old name of --pipeline", set_schedule},
    ExperimentOption{"placement", "P", "atlas, pp-across-dc, dp-across-dc or DCs \"east,east,west,west\"",
                     set_placement},
    ExperimentOption{"streams", "N", "TCP connections per cross-DC channel (1 to 64)", set_streams},
    ExperimentOption{"temporal-sharing", "on|off", "grant WAN links in slot order (Atlas)", set_temporal_sharing},
    ExperimentOption{"pacing", "on|off", "pace cross-DC connections at rate / streams", set_pacing},
    ExperimentOption{"reorder-dcs", "on|off", "order Atlas's DCs so consecutive hops are short", set_reorder_dcs},
    ExperimentOption{"iterations", "N", "training iterations (1 to 100000)", set_iterations},
    ExperimentOption{"scale", "X", "multiplies message sizes and link rates (1e-6 to 1)", set_scale},
    ExperimentOption{"prefill", "on|off", "BubbleTea prefill (on needs a [prefill] section)", set_prefill},
    ExperimentOption{"inner-steps", "H", "DiLoCo: inner steps per outer round (1 to 100000)", set_inner_steps},
    ExperimentOption{"fragments", "F", "Streaming DiLoCo: fragments synced in turn (1 to 1024)", set_fragments},
    ExperimentOption{"outer-bits", "B", "DiLoCo: bits per value of the outer sync (1 to 64)", set_outer_bits},
    ExperimentOption{"overlap-steps", "T", "Streaming DiLoCo: inner steps a fragment's sync overlaps",
                     set_overlap_steps},
    ExperimentOption{"wan-start", "TIME",
                     "where in the testbed's schedules and events a simulated run starts (\"32400s\")", set_wan_start},
};

[[noreturn]] void fail_unknown(const std::string& name) {
  std::vector<std::string_view> names;
  std::vector<std::string> known;
  for (const ExperimentOption& option : kOptions) {
    names.push_back(option.name);
    known.push_back("--" + std::string(option.name));
  }
  const std::string closest = closest_name(name, names);
  const std::string shown = base::escaped(name);
  throw ExperimentError(closest.empty()
                            ? fmt::format("--{}: unknown experiment option (known: {})", shown, join(known))
                            : fmt::format("--{}: unknown experiment option; did you mean --{}?", shown, closest));
}

}  // namespace

std::span<const ExperimentOption> experiment_options() { return kOptions; }

void apply_override(Experiment& experiment, std::string_view option, std::string_view value) {
  const std::string name = normalize_option(option);
  const auto found =
      std::find_if(kOptions.begin(), kOptions.end(), [&](const auto& known) { return known.name == name; });
  if (found == kOptions.end()) fail_unknown(name);
  found->apply(experiment, "--" + name, value);
  check_cross_fields(experiment);  // an option names itself in what it broke
}

}  // namespace wanlab::harness
