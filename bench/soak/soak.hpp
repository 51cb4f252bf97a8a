// The soak benchmark's run: a three-DC testbed under mixed
// load for a long time (load.hpp), a row every sample (sampler.hpp), every
// drop judged against the configuration in force (drops.hpp); then `wanlab
// down`, a search for anything the testbed left behind
// (wanlab/emulator/leftovers.hpp), the verdicts (verdicts.hpp) and the report
// (report.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "soak/config.hpp"
#include "soak/drops.hpp"
#include "soak/load.hpp"
#include "soak/report.hpp"
#include "soak/sampler.hpp"

namespace wanlab::bench::soak {

class Soak {
 public:
  Soak(const Config& config, std::string work_dir) : config_(config), work_(std::move(work_dir)) {}
  // 0 when every verdict passes, 3 when one fails. A signal ends it at the
  // next second, and the members take down what they hold: the processes,
  // then the testbed.
  int run();

 private:
  void bring_up();
  void drive();
  void tick(int t);
  void finish_load();
  // `wanlab down`, then what it left; fills down_seconds_ and processes_at_down_.
  std::vector<std::string> take_down();
  void report(const Verdicts& verdicts);

  const Config& config_;
  std::string work_;
  RunFacts facts_;
  Clock::time_point run_start_;
  std::set<std::string> links_before_up_;
  // Declared in the order they come up: destroyed the other way round.
  std::unique_ptr<Testbed> bed_;
  std::optional<DropJudge> drops_;
  std::optional<Load> load_;
  std::optional<Sampler> sampler_;
  std::vector<Row> rows_;
  std::vector<ClientReport> clients_;
  double down_seconds_ = 0;
  std::size_t processes_at_down_ = 0;
};

}  // namespace wanlab::bench::soak
