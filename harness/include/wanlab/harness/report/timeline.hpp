// timeline.svg: a Gantt chart of one iteration, one row per worker shown
// (ranks.hpp), rows grouped by DC, with a time axis and a legend.
#pragma once

#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/report/ranks.hpp"

namespace wanlab::harness {

// std::out_of_range for an iteration the run does not have. Every worker's
// row, or only those `ranks` shows (each DC's header line then gives the
// spread of GPU busy over all its workers).
std::string timeline_svg(const RunRecord& record, int iteration);
std::string timeline_svg(const RunRecord& record, int iteration, const RankSelection& ranks);
// DIR/timeline.svg (base::OutputDir: nothing planted there is written
// through; base::FileError naming it).
void write_timeline_svg(const RunRecord& record, int iteration, const RankSelection& ranks, const base::OutputDir& dir);

}  // namespace wanlab::harness
