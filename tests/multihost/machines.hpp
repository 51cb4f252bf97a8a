// The multihost tests' machines: three guests m1, m2, m3 (10.99.0.1-3) of
// scripts/vm/run-machines.sh, each running one of this folder's guest
// scripts with a shared scratch directory ($WANLAB_MH_DIR) where the
// machines meet and leave what they measured.
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/scratch.hpp"

namespace wanlab::test {

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The median of ping's per-reply times.
inline double median_rtt_ms(const std::string& ping_output) {
  std::vector<double> times;
  const std::regex time_re(R"(time=([0-9.]+) ms)");
  for (auto it = std::sregex_iterator(ping_output.begin(), ping_output.end(), time_re); it != std::sregex_iterator();
       ++it)
    times.push_back(std::stod((*it)[1]));
  BOOST_TEST_REQUIRE(!times.empty(), "no replies in: " << ping_output);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Machines {
  Scratch scratch{"multihost"};
  CliResult run;

  // Files the guests need (written into the shared directory first), then
  // the guests, each running tests/multihost/`guest_script`.
  explicit Machines(const std::string& guest_script,
                    const std::vector<std::pair<std::string, std::string>>& files = {}) {
    for (const auto& [name, text] : files) scratch.file(name, text);
    const std::string dir = scratch.dir.string();
    const std::string source = source_dir();
    run = wanlab::test::run({source + "/scripts/vm/run-machines.sh",
                             "--machine",
                             "m1=10.99.0.1",
                             "--machine",
                             "m2=10.99.0.2",
                             "--machine",
                             "m3=10.99.0.3",
                             "--share",
                             dir,
                             "--env",
                             "WANLAB_MH_DIR=" + dir,
                             "--env",
                             "WANLAB_MH_COUNT=3",
                             "--env",
                             "WANLAB_BIN=" + wanlab_bin(),
                             "--env",
                             "WANLAB_SOURCE_DIR=" + source,
                             "--timeout",
                             "540",
                             "--memory",
                             "1024",
                             "--",
                             source + "/tests/multihost/" + guest_script});
    BOOST_TEST_MESSAGE(run.output);
  }
  std::filesystem::path file(const std::string& name) const { return scratch.dir / name; }
  std::string read(const std::string& name) const { return slurp(file(name)); }
};

}  // namespace wanlab::test
