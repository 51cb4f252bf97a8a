// The experiment's [diloco] section (experiment.hpp, Diloco): read strictly,
// its schedule-dependent defaults, and its checks against the other fields.
#pragma once

#include <string>
#include <string_view>

#include "experiment/toml_fields.hpp"

namespace wanlab::harness::detail {

// [diloco] into experiment().diloco. Other schedules leave it unused (so
// that one file can be swept over schedules).
void read_diloco(FieldReader& reader, const toml::table& root);
// The keys neither the file nor an override gave, from the schedule: diloco
// syncs everything at once, at the model's precision, without overlap;
// streaming-diloco in 4 fragments of 4-bit values, each overlapping one step.
void apply_diloco_defaults(Experiment& experiment);
// With schedule diloco or streaming-diloco: dp < 2, another
// placement than dp-across-dc, [prefill], fragments or overlap on plain
// diloco, more fragments than inner steps, an overlap beyond a fragment's block.
void check_diloco(const Experiment& experiment);
// `--inner-steps` and the other command-line overrides of [diloco]: `key` is
// the field in the section ("inner_steps").
void override_diloco(Experiment& experiment, const std::string& flag, std::string_view key, std::string_view value);

}  // namespace wanlab::harness::detail
