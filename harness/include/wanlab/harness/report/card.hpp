// card.yaml: a run's workload card, in the spirit of CCL-Bench's (what ran,
// on what, built from what, and the command that runs it again), so a run
// directory can be reused without reading wanlab's own formats.
#pragma once

#include <string>

#include "wanlab/base/files.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {

// How the run was started, as typed.
struct Invocation {
  std::string command;            // "wanlab train e.toml --simulate --out r" (arguments quoted where needed)
  std::string working_directory;  // where it was typed: the command's paths are relative to it
  std::string sweep_point;        // `wanlab whatif`: which point ("3 of 12: parallel.dp = 2"); else empty
};

// The card of `record` on `scenario` (as written: rates at full size; the
// experiment's scale is on the card). Fields: card_version, name, run (kind:
// emulated or simulated, runtime, iterations, seed, command, working
// directory, experiment and testbed files), model, parallelism (pp, dp, tp,
// GPUs), schedule (placement, stages' DCs, streams, temporal sharing, scale),
// compute, prefill, testbed (DCs with hosts and GPUs, intra-DC link, the WAN
// matrix: delay, jitter, rate, flow rate, loss per directed pair), software
// (wanlab version and git commit, compiler, kernel, libraries, container
// runtime). Strings are double-quoted YAML (JSON escapes), so any text is safe.
std::string workload_card(const RunRecord& record, const emulator::Scenario& scenario, const Invocation& invocation);
// Writes it to DIR/card.yaml; base::FileError naming the file when that fails.
void write_workload_card(const RunRecord& record, const emulator::Scenario& scenario, const Invocation& invocation,
                         const base::OutputDir& dir);

}  // namespace wanlab::harness
