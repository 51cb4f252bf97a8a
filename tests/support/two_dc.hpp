// The two-DC testbed the harness's integration tests run on: 40 ms one way at
// 1 Gbit/s between the DCs, with host buffers that keep one TCP stream well
// below the link rate on that path.
#pragma once

#include <string>
#include <string_view>

namespace wanlab::test {

inline std::string two_dc_scenario(std::string_view name) {
  return "name = \"" + std::string(name) + R"("
[defaults]
rate = "1gbit"
queue = "1bdp"
[intra_dc]
delay = "50us"
rate = "10gbit"
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "4mb"
tcp_rmem_max = "6mb"
[[dc]]
name = "east"
hosts = 2
[[dc]]
name = "west"
hosts = 2
[[link]]
between = ["east", "west"]
delay = "40ms"
)";
}

}  // namespace wanlab::test
