// Measurements between two emulated hosts, done in-process: a thread enters
// each host's namespace. Used by `wanlab demo`, the integration tests and the
// benchmark.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wanlab::emulator {

struct Endpoint {
  std::string netns;
  std::uint32_t ipv4 = 0;  // host byte order
};

// Round-trip times (ms) of `count` UDP echoes sent `interval_ms` apart; a lost
// echo (no answer within 2 s) is left out.
std::vector<double> measure_rtt_ms(const Endpoint& from, const Endpoint& to, int count, int interval_ms);

struct GoodputOptions {
  double seconds = 3.0;
  double warmup_seconds = 1.0;  // bytes received before this are not counted
  std::optional<std::string> congestion;  // e.g. "cubic"
  int streams = 1;
};

// TCP goodput from `from` to `to` in bit/s, counted at the receiver.
double measure_goodput_bps(const Endpoint& from, const Endpoint& to, const GoodputOptions& options);

double median(std::vector<double> values);
double percentile(std::vector<double> values, double p);  // p in [0, 100]

}  // namespace wanlab::emulator
