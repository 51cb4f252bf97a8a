// What moving bytes between DCs costs: an experiment's [egress] section, read
// by the planner (planner.hpp) to price a plan's WAN traffic per iteration.
#pragma once

#include <map>
#include <string>
#include <utility>

namespace wanlab::harness {

struct Egress {
  // USD per GB sent from one DC to another. AWS charges $0.02 per GB for data
  // transfer out of EC2 to another AWS region from its US and EU regions
  // (Amazon EC2 on-demand pricing, "Data Transfer OUT From Amazon EC2 To
  // Another AWS Region"); several Asia Pacific and South America regions
  // charge more, which [egress.pairs] can say.
  double price_per_gb = 0.02;
  // Per DC pair, both directions: {"a", "b"} with a < b by name.
  std::map<std::pair<std::string, std::string>, double> pairs;

  double price(const std::string& from, const std::string& to) const {
    const auto found = pairs.find(from < to ? std::pair{from, to} : std::pair{to, from});
    return found != pairs.end() ? found->second : price_per_gb;
  }
};

}  // namespace wanlab::harness
