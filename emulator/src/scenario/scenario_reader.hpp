// What the scenario parser's sources share: its reader (base::TomlReader,
// whose errors are ScenarioErrors) and the schedule tables' reader
// (scenario_schedule.cpp).
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "wanlab/base/toml.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/schedule.hpp"

namespace wanlab::emulator::detail {

class ScenarioReader : public base::TomlReader {
 public:
  using TomlReader::TomlReader;

 protected:
  [[noreturn]] void raise(const std::string& message) const override { throw ScenarioError(message); }
};

// `parent`'s schedule = { ... } table ([defaults], a [[link]], a live
// schedule's change in changes.toml), or null without one; `owner` names the
// parent in errors ("defaults.schedule"). A trace file is named relative to
// the reader's file. With ScheduleFiles::skip a trace file's schedule is not
// read (null). Errors are raised as `reader` raises them.
std::shared_ptr<const Schedule> read_schedule_table(const base::TomlReader& reader, const toml::table& parent,
                                                    std::string_view owner, ScheduleFiles files);

// The pool's prefix, "10.77.0.0/16"; throws std::invalid_argument (address_pool.cpp).
Ipv4Prefix parse_ipv4_prefix(std::string_view text);
// The special range `pool` overlaps ("127.0.0.0/8 (loopback: ...)"), or empty.
std::string_view unusable_range(const Ipv4Prefix& pool);
// The longest pool prefix that gives each of `dcs` DCs a /24.
int longest_pool_prefix(std::size_t dcs);

}  // namespace wanlab::emulator::detail
