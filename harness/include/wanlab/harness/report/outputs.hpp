// What `wanlab train --out DIR` leaves in DIR: results.json, trace.json,
// timeline.svg, card.yaml and ranks/rank-N.json. All of it is written through
// base::OutputDir, so nothing planted in DIR is written through or replaced.
#pragma once

#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/report/card.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/report/ranks.hpp"

namespace wanlab::harness {

// Throws base::FileError naming the first output that could not be written
// (a link, a device, a directory where a file goes): checked before a run,
// so a bad --out costs nothing.
void check_run_outputs(const base::OutputDir& dir);
// Writes them all; the timeline is of the last iteration, the steady state.
// The trace, the timeline's rows and ranks/ hold the workers `ranks` shows;
// results.json and the card always cover every worker.
// Returns the line that says what was written ("wrote DIR/results.json, ...").
std::string write_run_outputs(const RunRecord& record, const emulator::Scenario& scenario, const Invocation& invocation,
                              const RankSelection& ranks, const base::OutputDir& dir);

}  // namespace wanlab::harness
