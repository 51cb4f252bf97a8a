// A scenario from a TOML document already parsed: `wanlab whatif` sets the
// swept keys in it before the reader runs, so every key the reader knows is
// sweepable and every bad value gets the reader's own error.
#pragma once

#include <string>

#include <toml++/toml.h>

#include "wanlab/emulator/scenario.hpp"

namespace wanlab::emulator {

// As parse_scenario; errors name each node's own file and line (a value moved
// in from a sweep file, there). `source` becomes Scenario::source.
Scenario parse_scenario_table(const toml::table& root, const std::string& path, std::string source,
                              ScheduleFiles files = ScheduleFiles::read);

}  // namespace wanlab::emulator
