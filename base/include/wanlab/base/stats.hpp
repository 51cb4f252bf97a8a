// Order statistics of measured or simulated samples, shared by the emulator's
// probes and the harness's reports so that every p50/p99 means the same thing.
#pragma once

#include <vector>

namespace wanlab::base {

// The p-th percentile (p in [0, 100]) with linear interpolation between the
// closest ranks (rank = p / 100 x (n - 1), like numpy's default); NaN for no values.
double percentile(std::vector<double> values, double p);

}  // namespace wanlab::base
