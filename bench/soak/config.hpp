// The soak benchmark's settings, from its command line (bench/soak.cpp).
#pragma once

#include <string>

namespace wanlab::bench::soak {

struct Config {
  std::string wanlab;
  std::string scenario;
  std::string name = "soak";
  double seconds = 600;
  int sample_seconds = 10;
  double warmup_seconds = 60;
  std::string markdown;
  std::string csv;
  std::string command = "bench/run-soak-bench.sh";
};

}  // namespace wanlab::bench::soak
