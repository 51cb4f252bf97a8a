#include "bench_options.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <exception>

namespace wanlab::bench {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void read_option_pairs(int argc, char** argv, const std::string& program,
                       const std::function<void(const std::string& option, const std::string& value)>& set) {
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (i + 1 >= argc) {
      fmt::print(stderr, "{}: {}: needs a value\n", program, option);
      std::exit(2);
    }
    const std::string value = argv[++i];
    try {
      set(option, value);
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}: {} {}: {}\n", program, option, value, e.what());
      std::exit(2);
    }
  }
}

}  // namespace wanlab::bench
