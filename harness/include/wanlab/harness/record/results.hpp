// results.json as a type: what a run reports (made from its RunRecord by
// make_results), written by to_json and read back by results_from_json, the
// one codec of the document, beside each other (docs/REPORTS.md lists the fields).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wanlab/base/files.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {

// One request of a BubbleTea run, as results.json's "request_outcomes" lists
// it: [id, arrival_s, prompt_tokens, state, ttft_s or null, reason].
struct RequestRow {
  int id = 0;
  double arrival_s = 0;
  int prompt_tokens = 0;
  std::string state;             // to_string(RequestState)
  std::optional<double> ttft_s;  // served requests only
  std::string reason;
  bool operator==(const RequestRow&) const = default;
};

// results.json's "prefill": the summary (summarize_prefill), what happened
// (notes) and every request.
struct PrefillResults {
  PrefillSummary summary;
  std::vector<std::string> notes;
  std::vector<RequestRow> requests;
  bool operator==(const PrefillResults&) const = default;
};

struct Results {
  std::string experiment;
  std::string runtime;               // RunRecord::runtime
  std::string runtime_detail;        // written only when not empty
  RunSummary run;                    // the means
  std::optional<StepFigures> steps;  // DiLoCo: the means per inner step
  std::optional<PrefillResults> prefill;
  std::vector<IterationSummary> iterations;
  std::vector<LinkTransfers> transfers;      // per WAN link
  std::optional<EmulationHealth> emulation;  // real runs: whether the emulation kept up
  std::optional<TrainingSlowdown> slowdown;  // real runs: against the plan, and why
  // The experiment and the plan as they ran: echoes of the inputs, kept as
  // JSON (configuration: every experiment key; plan: sizes, stage DCs, workers).
  nlohmann::ordered_json configuration = nlohmann::ordered_json::object();
  nlohmann::ordered_json plan = nlohmann::ordered_json::object();
  std::uint64_t seed = 0;
  std::vector<std::pair<std::string, std::string>> versions;  // "wanlab", "fmt", ... -> version
  std::string scenario_path;
  std::string scenario_text;
  bool operator==(const Results&) const = default;
};

// A results.json that cannot be read: one line, "LABEL: what" or
// "LABEL.configuration: \"streams\" is not a whole number".
class ResultsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Results make_results(const RunRecord& record, const std::string& scenario_text);

nlohmann::ordered_json to_json(const Results& results);
// The file's text: indented by two, one trailing newline.
std::string results_text(const Results& results);
// make_results' text, and the file DIR/results.json (base::OutputDir: nothing
// planted there is written through; base::FileError naming it).
std::string results_json(const RunRecord& record, const std::string& scenario_text);
void write_results_json(const RunRecord& record, const std::string& scenario_text, const base::OutputDir& dir);
// `label` names the document in errors (the file's path). Members the reader
// does not know are ignored, so a newer file still compares.
Results results_from_json(std::string_view text, const std::string& label);
// DIR/results.json, or the file itself if `path` is a file.
Results read_results(const std::string& path);

// The configuration's values a comparison shows (throw ResultsError naming
// "LABEL.configuration" and the field).
struct ConfigurationView {
  std::string schedule;
  std::string placement;  // a policy, or the DCs of an explicit list joined by ','
  int streams = 0;
  bool temporal_sharing = false;
  double scale = 1;
};
ConfigurationView configuration_view(const Results& results, const std::string& label);

// A served request as the digest keeps it: when it arrived and its TTFT.
struct ServedRequest {
  double arrival_s = 0;
  double ttft_s = 0;
  bool operator==(const ServedRequest&) const = default;
};

// What `wanlab compare` shows of a results.json, read as a stream: the
// document is never held (a 100 MB file took 1.9 GB as a tree); only these
// members are kept, each checked as results_from_json checks it.
// What compare shows of results.json "emulation" beside the verdict.
struct EmulationFigures {
  double wake_late_share = 0;
  double wake_late_p99_ms = 0;
  double cpu_mean = 0;
  double cpu_saturated_share = 0;
  double cpu_stolen_mean = 0;                 // 0 in files written before steal was measured
  std::optional<double> releaser_late_share;  // verdicts over 100 us late; the nfqueue path only
  bool operator==(const EmulationFigures&) const = default;
};

struct ResultsDigest {
  std::string experiment;
  std::string runtime;
  RunSummary run;  // mean_iteration_s, mean_gpu_utilization, mean_bubble_fraction; the rest 0
  ConfigurationView configuration;
  std::size_t iterations = 0;
  double first_iteration_s = 0;  // iterations[0].time_s (0 without iterations)
  double wan_bytes = 0;          // over every iteration and link
  int steps_per_iteration = 1;   // per_step.steps_per_iteration: a DiLoCo round's inner steps
  // utilization with prefill, tokens/s, TTFT p50 and p99, served, rejected,
  // failed and training delay; the rest 0
  std::optional<PrefillSummary> prefill;
  // With prefill: its request_outcomes' served requests, in the file's order
  // (every row is checked as results_from_json checks it; only these are kept).
  std::vector<ServedRequest> served;
  std::optional<double> ttft_slo_s;  // configuration.prefill.ttft_slo_s, written when prefill is on
  // Real runs: emulation.kept_up, .verdict, and the figures compare's CSV shows.
  std::optional<bool> emulation_kept_up;
  std::string emulation_verdict;
  EmulationFigures emulation;
  std::optional<TrainingSlowdown> slowdown;  // real runs: against the plan, by cause
};
// Throws ResultsError like results_from_json ("LABEL.iterations[2].wan_bytes: ...").
ResultsDigest results_digest_from_json(std::string_view text, const std::string& label);
// DIR/results.json, or the file itself if `path` is a file.
ResultsDigest read_results_digest(const std::string& path);

}  // namespace wanlab::harness
