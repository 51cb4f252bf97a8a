// JSON output for --json: built as a toml++ table and printed by its JSON
// formatter, so strings are always escaped correctly.
#pragma once

#include <iostream>
#include <toml++/toml.h>

namespace wanlab::cli {

template <typename Node>
void print_json(const Node& node) {
  std::cout << toml::json_formatter{node} << "\n";
}

}  // namespace wanlab::cli
