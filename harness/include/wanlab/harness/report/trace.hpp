// trace.json: a run's events as Chrome trace events (Perfetto, chrome://tracing),
// one track per GPU and per WAN link.
#pragma once

#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {

std::string trace_json(const RunRecord& record);
// DIR/trace.json, written event by event (base::OutputDir: nothing planted
// there is written through; base::FileError naming it).
void write_trace_json(const RunRecord& record, const base::OutputDir& dir);

}  // namespace wanlab::harness
