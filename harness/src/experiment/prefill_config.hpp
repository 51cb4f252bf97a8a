// The experiment's [prefill] section (BubbleTea): reading it, checking it
// against the rest of the experiment, and the --prefill option. Used by the
// experiment parser (experiment.cpp); the keys are in docs/EXPERIMENT.md.
#pragma once

#include <string>
#include <string_view>

#include "experiment/toml_fields.hpp"

namespace wanlab::harness::detail {

// [prefill] with [prefill.model] and [prefill.time] into experiment().prefill.
// A [prefill] section switches prefill on unless it says enabled = false; a
// section that is off is still read strictly.
void read_prefill(FieldReader& reader, const toml::table& root);

// Checks that need the whole experiment, on its final values (after the file
// and after every override), only when prefill is on: a source of requests,
// a decode DC and a prefill time (a table or FLOPs); the memory, with the
// served model counted, is checked with the rest (check_memory).
void check_prefill(const Experiment& experiment);

// Where errors found after reading point: the [prefill] section
// ("e.toml:12:1"), or "--prefill" when that option switched it on.
std::string prefill_where(const Experiment& experiment);

// --prefill on|off. "on" needs a [prefill] section in the file.
void override_prefill(Experiment& experiment, const std::string& flag, bool on);

}  // namespace wanlab::harness::detail
