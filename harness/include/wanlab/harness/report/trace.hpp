// trace.json: a run's events as Chrome trace events (Perfetto, chrome://tracing),
// one track per GPU and per WAN link.
#pragma once

#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/report/ranks.hpp"

namespace wanlab::harness {

// Every worker's track, or only those `ranks` shows (and their transfers).
std::string trace_json(const RunRecord& record);
std::string trace_json(const RunRecord& record, const RankSelection& ranks);
// DIR/trace.json, written event by event (base::OutputDir: nothing planted
// there is written through; base::FileError naming it).
void write_trace_json(const RunRecord& record, const RankSelection& ranks, const base::OutputDir& dir);

}  // namespace wanlab::harness
