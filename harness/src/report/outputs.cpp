#include "wanlab/harness/report/outputs.hpp"

#include <fmt/format.h>

#include "wanlab/harness/report/rank_trace.hpp"
#include "wanlab/harness/report/trace.hpp"
#include "wanlab/harness/report/timeline.hpp"
#include "wanlab/harness/record/results.hpp"

namespace wanlab::harness {

void check_run_outputs(const base::OutputDir& dir) {
  for (const char* file : {"results.json", "trace.json", "timeline.svg", "card.yaml"}) dir.check(file);
  dir.check("ranks", /*directory=*/true);
}

std::string write_run_outputs(const RunRecord& record, const emulator::Scenario& scenario, const Invocation& invocation,
                              const RankSelection& ranks, const base::OutputDir& dir) {
  write_results_json(record, scenario.source, dir);
  write_workload_card(record, scenario, invocation, dir);
  write_rank_traces(record, ranks, dir);
  write_trace_json(record, ranks, dir);
  write_timeline_svg(record, static_cast<int>(record.iteration_end_ns.size()) - 1, ranks, dir);
  return fmt::format(
      "wrote {0}/results.json, {0}/trace.json, {0}/timeline.svg, {0}/card.yaml, {0}/ranks/rank-N.json{1}", dir.path(),
      ranks.all() ? ""
                  : fmt::format("; trace, timeline and ranks/ show {} (--ranks all: every one)", ranks.description));
}

}  // namespace wanlab::harness
