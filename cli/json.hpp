// JSON output for --json, through nlohmann: keys in sorted order (a std::map),
// indented by two, strings always escaped correctly.
#pragma once

#include <nlohmann/json.hpp>

#include <iostream>

namespace wanlab::cli {

inline void print_json(const nlohmann::json& value) { std::cout << value.dump(2) << "\n"; }

}  // namespace wanlab::cli
