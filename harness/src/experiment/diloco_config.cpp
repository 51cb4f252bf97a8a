// [diloco]: the outer round of DiLoCo and Streaming DiLoCo (experiment.hpp),
// read as strictly as the rest of the experiment.
#include "experiment/diloco_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "wanlab/base/parse.hpp"

namespace wanlab::harness::detail {
namespace {

using namespace std::string_view_literals;

constexpr std::array kDilocoKeys{"inner_steps"sv, "fragments"sv, "outer_bits"sv, "overlap_steps"sv};
// An outer round of more inner steps than this is a typo (the papers use 50 to 500).
constexpr int kMaxInnerSteps = 100000;
constexpr int kMaxFragments = 1024;
// Streaming DiLoCo's defaults (Douillard et al. 2025: fragments of the
// model's layers synced in turn, values sent in 4 bits, an overlap of one
// inner step "with no loss of quality"). Plain DiLoCo sends the model's own
// precision, all at once.
constexpr int kStreamingFragments = 4;
constexpr int kStreamingOuterBits = 4;
constexpr int kStreamingOverlapSteps = 1;

IntRange range_of(std::string_view key) {
  if (key == "inner_steps") return {1, kMaxInnerSteps};
  if (key == "fragments") return {1, kMaxFragments};
  if (key == "outer_bits") return {1, 64};
  return {0, kMaxInnerSteps};  // overlap_steps
}

int& field_of(Diloco& diloco, std::string_view key) {
  if (key == "inner_steps") return diloco.inner_steps;
  if (key == "fragments") return diloco.fragments;
  if (key == "outer_bits") return diloco.outer_bits;
  return diloco.overlap_steps;
}

bool given(const Experiment& experiment, std::string_view key) {
  return experiment.positions.contains(fmt::format("diloco.{}", key));
}

}  // namespace

void read_diloco(FieldReader& reader, const toml::table& root) {
  const toml::table* section = reader.optional_table(root, "diloco");
  if (section == nullptr) return;
  reader.check_known_keys(*section, kDilocoKeys, "[diloco]");
  reader.remember("diloco", *section);
  for (std::string_view key : kDilocoKeys) {
    int& field = field_of(reader.experiment().diloco, key);
    field = FieldReader::to_int(reader.read_int(*section, key, fmt::format("diloco.{}", key), range_of(key)), field);
  }
}

void apply_diloco_defaults(Experiment& experiment) {
  const bool streaming = experiment.schedule == Schedule::streaming_diloco;
  Diloco& diloco = experiment.diloco;
  if (!given(experiment, "fragments")) diloco.fragments = streaming ? kStreamingFragments : 1;
  if (!given(experiment, "overlap_steps")) diloco.overlap_steps = streaming ? kStreamingOverlapSteps : 0;
  if (!given(experiment, "outer_bits"))
    diloco.outer_bits = streaming ? kStreamingOuterBits : 8 * experiment.model.bytes_per_value;
  // Fewer inner steps than the default fragments: a fragment per step, and
  // an overlap that still starts each sync inside its fragment's block.
  if (!streaming) return;
  if (!given(experiment, "fragments")) diloco.fragments = std::min(diloco.fragments, diloco.inner_steps);
  if (!given(experiment, "overlap_steps"))
    diloco.overlap_steps = std::min(diloco.overlap_steps, std::max(0, diloco.inner_steps / diloco.fragments - 1));
}

void check_diloco(const Experiment& experiment) {
  const Diloco& diloco = experiment.diloco;
  // [diloco] with another schedule is kept, not an error: one experiment
  // file can then be swept over schedules (scenarios/sweeps/atlas-diloco.toml).
  if (!is_diloco(experiment.schedule)) return;
  const std::string schedule = to_string(experiment.schedule);
  if (experiment.parallel.dp < 2)
    fail_field(experiment, "parallel.dp",
               fmt::format("{} syncs data-parallel replicas across DCs: needs dp >= 2, got {}", schedule,
                           experiment.parallel.dp));
  if (experiment.placement != Placement::dp_across_dc)
    fail_field(experiment, "placement",
               fmt::format("{} trains each replica inside one DC: placement must be dp-across-dc, got {}", schedule,
                           to_string(experiment.placement)));
  if (experiment.prefill.enabled)
    fail_field(experiment, "prefill.enabled",
               fmt::format("BubbleTea runs in the bubbles of gpipe, 1f1b and atlas pipelines, not {}", schedule));
  if (experiment.schedule == Schedule::diloco) {
    if (diloco.fragments != 1)
      fail_field(experiment, "diloco.fragments",
                 fmt::format(R"({} fragments are synced in turn by schedule "streaming-diloco"; diloco syncs 1)",
                             diloco.fragments));
    if (diloco.overlap_steps != 0)
      fail_field(experiment, "diloco.overlap_steps",
                 fmt::format(R"(an overlap of {} steps needs schedule "streaming-diloco"; diloco's sync blocks)",
                             diloco.overlap_steps));
    return;
  }
  if (diloco.fragments > diloco.inner_steps)
    fail_field(experiment, "diloco.fragments",
               fmt::format("{} fragments for {} inner steps; at most one fragment per inner step", diloco.fragments,
                           diloco.inner_steps));
  const int block = diloco.inner_steps / diloco.fragments;
  if (diloco.overlap_steps > block - 1)
    fail_field(experiment, "diloco.overlap_steps",
               fmt::format("{} steps; a fragment's sync must start inside its block of inner_steps / fragments = "
                           "{} steps, so at most {}",
                           diloco.overlap_steps, block, block - 1));
}

void override_diloco(Experiment& experiment, const std::string& flag, std::string_view key, std::string_view value) {
  const IntRange range = range_of(key);
  try {
    field_of(experiment.diloco, key) = static_cast<int>(base::parse_integer(value, range.min, range.max));
  } catch (const base::ParseError& error) {
    throw ExperimentError(fmt::format("{}: {}", flag, error.what()));
  }
  experiment.positions[fmt::format("diloco.{}", key)] = flag;
  apply_diloco_defaults(experiment);
}

}  // namespace wanlab::harness::detail
