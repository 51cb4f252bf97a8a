// What this binary was built from, for results.json and workload cards.
#pragma once

#include <string>

namespace wanlab::harness::detail {

struct BuildInfo {
  std::string wanlab;         // the project's version: "0.1.0"
  std::string git_commit;     // "9688d59c0a1b", "...-dirty"; empty when not built from a git checkout
  std::string compiler;       // "gcc 12.2.0"
  std::string tomlplusplus;   // "3.3.0"
  std::string fmt;            // "9.1.0"
  std::string nlohmann_json;  // "3.11.2"
};
const BuildInfo& build_info();

}  // namespace wanlab::harness::detail
