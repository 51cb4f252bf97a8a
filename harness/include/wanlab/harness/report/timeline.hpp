// timeline.svg: a Gantt chart of one iteration, one row per worker, rows
// grouped by DC, with a time axis and a legend.
#pragma once

#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {

// std::out_of_range for an iteration the run does not have.
std::string timeline_svg(const RunRecord& record, int iteration);
// DIR/timeline.svg (base::OutputDir: nothing planted there is written
// through; base::FileError naming it).
void write_timeline_svg(const RunRecord& record, int iteration, const base::OutputDir& dir);

}  // namespace wanlab::harness
