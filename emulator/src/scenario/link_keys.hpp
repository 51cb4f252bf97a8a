// The link keys shared by [defaults], [intra_dc], [[link]], [[event]] and the
// `wanlab set` options, so that file and command line read values one way.
#pragma once

#include "wanlab/emulator/input.hpp"

#include "wanlab/emulator/scenario.hpp"

#include <span>
#include <string>
#include <string_view>

namespace wanlab::emulator::detail {

struct LinkKey {
  std::string_view name;      // as in the scenario file: "flow_rate"
  std::string_view expected;  // for a value of the wrong type: `a rate like "100mbit"`
  bool is_bool;               // TOML boolean rather than a string with a unit
  // Parses `text` into its field of `params`; throws std::invalid_argument.
  void (*set)(LinkParams& params, std::string_view text);
};

std::span<const LinkKey> link_keys();
const LinkKey* find_link_key(std::string_view name);

using wanlab::emulator::closest_name;

}  // namespace wanlab::emulator::detail
