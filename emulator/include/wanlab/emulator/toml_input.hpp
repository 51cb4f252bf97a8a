// Error wording shared by the parsers of scenario and experiment files (both
// read TOML with toml++, which the including library must link).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "wanlab/base/parse.hpp"

namespace wanlab::emulator {

// "a table", "500", "\"fast\"": how a value that has the wrong type is shown.
inline std::string describe_value(const toml::node& node) {
  if (const auto* text = node.as_string()) return base::quoted(text->get());
  if (const auto* integer = node.as_integer()) return std::to_string(integer->get());
  if (const auto* number = node.as_floating_point()) return fmt::format("{}", number->get());
  if (const auto* flag = node.as_boolean()) return flag->get() ? "true" : "false";
  if (node.is_table()) return "a table";
  if (node.is_array()) return "an array";
  return "a date/time";
}

// "file:line:column" of a node: in its own file (a value moved in from
// another document, as `wanlab whatif` does, keeps its position there), else
// in `path`; a node made in memory has no position: `path` alone.
inline std::string source_position(const toml::source_region& region, const std::string& path) {
  const std::string& file = region.path ? *region.path : path;
  if (region.begin.line == 0) return file;
  return fmt::format("{}:{}:{}", file, region.begin.line, region.begin.column);
}

// A parser's message on one line, as every error here is: newlines become
// spaces, other control characters (toml++ shows the bytes it stopped at as
// they are) \xNN as base::quoted shows them.
inline std::string one_line(std::string_view text) {
  std::string line;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += ' ';
    } else if (byte < 0x20 || byte == 0x7f) {
      line += fmt::format("\\x{:02x}", byte);
    } else {
      line += c;
    }
  }
  return line;
}

}  // namespace wanlab::emulator
