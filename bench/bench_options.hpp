// The benchmarks' command lines: "--option value" pairs and comma lists.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace wanlab::bench {

// "a,b,,c" -> {"a", "b", "", "c"}: a list option's values.
std::vector<std::string> split_commas(const std::string& text);
// Gives each "--option value" pair of argv to `set`, which throws
// std::exception for a bad value or an unknown option; a missing value or a
// throw is one line "PROGRAM: --option value: why" on stderr and exit status 2.
void read_option_pairs(int argc, char** argv, const std::string& program,
                       const std::function<void(const std::string& option, const std::string& value)>& set);

}  // namespace wanlab::bench
