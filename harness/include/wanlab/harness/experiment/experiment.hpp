// An experiment file (TOML): which testbed, which schedule and placement, the
// model, the parallelism and the GPUs per DC. Parsed and validated like
// scenario files: every bad input is one ExperimentError "file:line:column: ...".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/egress.hpp"
#include "wanlab/harness/experiment/fabric.hpp"
#include "wanlab/harness/experiment/prefill.hpp"

namespace wanlab::harness {

class ExperimentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// gpipe, 1f1b and atlas: one pipeline (across DCs or not) per iteration.
// diloco and streaming_diloco: each replica trains inside one DC for
// [diloco] inner_steps, its stages' gradients all-reduced inside the DC, and
// the replicas sync across DCs once per outer round (docs/DILOCO.md).
enum class Schedule { gpipe, one_f_one_b, atlas, diloco, streaming_diloco };
inline bool is_diloco(Schedule schedule) {
  return schedule == Schedule::diloco || schedule == Schedule::streaming_diloco;
}
enum class Placement { atlas, pp_across_dc, dp_across_dc, explicit_list };

struct Model {
  int layers = 32;
  int hidden = 4096;
  int seq_len = 2048;
  int bytes_per_value = 2;
  int microbatch = 1;    // sequences per microbatch
  int microbatches = 8;  // per iteration
};

struct Parallel {
  int pp = 4;
  int dp = 1;
  int tp = 1;  // GPUs per stage replica: a multiplier on GPU count
};

struct Compute {
  // FLOPs-derived (6N per token, 8N with recompute) ...
  std::optional<double> peak_tflops;
  std::optional<double> mfu;
  bool recompute = false;
  // ... or given, per microbatch per stage.
  std::optional<double> forward_ms;
  std::optional<double> backward_ms;
};

// [diloco]: the outer round of DiLoCo (Douillard et al. 2023) and Streaming
// DiLoCo (Douillard et al. 2025). One iteration of such a plan is one outer
// round of `inner_steps` inner steps; its outer sync all-reduces each stage's
// pseudo-gradients (stage parameters x outer_bits / 8 bytes) over every
// replica of the stage, grouped by DC. Streaming: the stage's parameters in
// `fragments` equal parts, fragment f synced in the background over the
// `overlap_steps` inner steps before the end of its block of inner_steps /
// fragments steps, and waited for at that block's end.
struct Diloco {
  int inner_steps = 100;  // H
  int fragments = 1;      // diloco: 1; streaming-diloco default 4
  int outer_bits = 16;    // diloco default: the model's bytes_per_value x 8; streaming: 4
  int overlap_steps = 0;  // diloco: 0; streaming-diloco default 1
};

struct Experiment;
// Training steps one iteration holds: [diloco] inner_steps with a DiLoCo
// schedule (an iteration is one outer round), else 1.
int steps_per_iteration(const Experiment& experiment);

struct Experiment {
  std::string path;
  std::string name;
  std::string testbed_path;  // resolved relative to the experiment file
  Schedule schedule = Schedule::atlas;
  Placement placement = Placement::atlas;
  std::vector<std::string> placement_dcs;  // Placement::explicit_list: one DC per stage
  int streams = 8;
  bool temporal_sharing = true;
  int iterations = 5;
  std::uint64_t seed = 1;
  double scale = 1.0;  // multiplies every message size and every link rate; 1e-6 to 1
  // Where in the testbed's timeline (its schedules and [[event]]s, which
  // start when it comes up) a simulated run starts: "32400s" on a daily
  // schedule is 9:00. A real run starts at its testbed's 0.
  std::uint64_t wan_start_ns = 0;
  Model model;
  Diloco diloco;  // with schedule diloco or streaming-diloco
  Parallel parallel;
  Compute compute;
  std::vector<std::pair<std::string, int>> gpus;  // per DC, in file order; empty: no limit
  // [gpus] memory_gb: every GPU's memory (default: an 80 GB H100/A100).
  double gpu_memory_gb = 80;
  PrefillConfig prefill;  // [prefill]: BubbleTea (off unless enabled)
  // [fabric]: simulate a real DC network inside each DC (fabric.hpp); unset:
  // the emulated testbed's [intra_dc] pair, as the real run has it.
  std::optional<Fabric> fabric;
  Egress egress;  // [egress]: USD per GB between DCs, for `wanlab plan`
  // Atlas placement: order the selected DCs so that consecutive pipeline hops
  // are short (false: Algorithm 1's order, most GPUs first).
  bool reorder_dcs = true;
  // Pace each cross-DC connection at its pair's rate / streams (the
  // transport's SO_MAX_PACING_RATE), so a window does not go out as one burst
  // that the link's queue drops (docs/RUNTIME.md, "Pacing"). Real runs only.
  bool pacing = true;

  // Which schedule-dependent settings the file or an override gave; the others
  // follow `schedule` (gpipe/1f1b: pp-across-dc, 1 stream, no temporal
  // sharing; atlas: atlas, 8 streams, temporal sharing; diloco and
  // streaming-diloco: dp-across-dc, 8 streams, no temporal sharing, and
  // [diloco]'s defaults above).
  bool placement_given = false;
  bool streams_given = false;
  bool temporal_sharing_given = false;

  // Where each given field came from, for errors found later (make_plan checks
  // DC names against the testbed): "placement", "placement[2]", "gpus.east"
  // -> "file:line:column" or "--placement".
  std::map<std::string, std::string> positions;
  // positions[field], or the file's path when the field was not given.
  std::string where(const std::string& field) const;
};

// Reads and validates; `schedule = "atlas"` implies placement atlas, temporal
// sharing and several streams unless the file says otherwise.
Experiment load_experiment(const std::string& path);
Experiment parse_experiment(std::string_view toml_text, const std::string& path);

// The settings a command line may override (`wanlab train --reorder-dcs off`):
// the one list that apply_override accepts and `wanlab train` offers.
struct ExperimentOption {
  std::string_view name;     // without "--": "reorder-dcs" (in the file: reorder_dcs)
  std::string_view metavar;  // the value in a usage line: "on|off"
  std::string_view help;     // what it sets, for --help
  // Parses `value` into `experiment`; `flag` ("--reorder-dcs") names the
  // option in errors. Throws ExperimentError.
  void (*apply)(Experiment& experiment, const std::string& flag, std::string_view value);
};
std::span<const ExperimentOption> experiment_options();

// Applies one override from experiment_options(); `option` may be given with
// or without the leading "--", and with '_' for '-'. Numbers are parsed
// strictly, within the limits the file's reader uses (wanlab::base: "--streams:
// expected a whole number from 1 to 64, got "8x""). --placement takes a
// placement name or a comma-separated DC list ("east,east,west,west").
// --schedule re-derives the settings neither the file nor another override gave.
// --prefill on needs a [prefill] section. The checks between fields (pp <=
// layers, a placement list of pp DCs, the run's size: check_plan_size; with
// prefill on, its requests, decode DC, prefill time and memory: check_memory)
// run again on the result, so an override that breaks one fails naming the
// option. An unknown option is an ExperimentError suggesting the closest.
void apply_override(Experiment& experiment, std::string_view option, std::string_view value);

// Loads the testbed scenario the experiment names. A missing or unreadable file
// is an ExperimentError at the `testbed` key; a bad scenario keeps its
// ScenarioError ("three-dc.toml:12:1: ...").
emulator::Scenario load_testbed(const Experiment& experiment);

std::string to_string(Schedule schedule);
std::string to_string(Placement placement);

}  // namespace wanlab::harness
