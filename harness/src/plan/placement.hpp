// Placement of workers on DCs; used by make_plan.
#pragma once

#include <vector>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"

namespace wanlab::harness::detail {

// GPUs per testbed DC (by index) from [gpus]; every DC pp x dp x tp when [gpus]
// is empty. Throws ExperimentError at "gpus.<dc>" for a DC not in the testbed.
std::vector<int> available_gpus(const Experiment& experiment, const emulator::Scenario& scenario);

// DC index of every worker: result[replica][stage]. Checks DC names of an
// explicit list and that every DC has the GPUs its workers need.
std::vector<std::vector<int>> place_workers(const Experiment& experiment, const emulator::Scenario& scenario);

// With prefill on, [prefill] decode_dc must be a DC of the testbed: throws
// ExperimentError at "prefill.decode_dc" otherwise.
void check_decode_dc(const Experiment& experiment, const emulator::Scenario& scenario);

}  // namespace wanlab::harness::detail
