// Per-rank traces in the PyTorch profiler's JSON shape (Kineto's Chrome trace:
// schemaVersion, deviceProperties, distributedInfo, traceEvents), one file per
// worker, for trace analysers that read a directory of rank traces (Holistic
// Trace Analysis and the like). Each worker is one rank on GPU 0 of its own:
// - forward and backward (and BubbleTea's prefill chunks) are kernels on
//   stream 7, named "wanlab::forward mb 3" and so on: computation;
// - sends, receives (the time blocked waiting) and all-reduces are NCCL
//   kernels on stream 13 ("ncclDevKernel_SendRecv ...",
//   "ncclDevKernel_AllReduce_Sum_RING ..."): analysers class kernels named
//   nccl* as communication;
// - each iteration is a "ProfilerStep#i" user annotation on the CPU side.
// Times are microseconds since the run's origin, as in trace.json.
#pragma once

#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/report/ranks.hpp"

namespace wanlab::harness {

std::string rank_trace_json(const RunRecord& record, int worker);
// DIR/ranks/rank-<w>.json for every worker `shown` shows (DIR/ranks is made);
// base::FileError naming a path that cannot be written.
void write_rank_traces(const RunRecord& record, const RankSelection& shown, const base::OutputDir& dir);

}  // namespace wanlab::harness
