// `wanlab compare`: any number of results.json files side by side, a column
// per run, as a table, as Markdown or as CSV (a row per run), and one run's
// TTFTs as CSV. Needs no kernel: it lives in wanlab_harness_core.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wanlab/harness/record/results.hpp"

namespace wanlab::harness {

// BubbleTea's figures of a run with prefill (results.json "prefill").
struct PrefillColumns {
  double utilization = 0;            // training + prefill
  double tokens_per_s = 0;           // prompt tokens prefilled per second
  std::optional<double> ttft_p50_s;  // none: nothing was served
  std::optional<double> ttft_p99_s;
  int served = 0;
  int rejected = 0;
  int failed = 0;
  double training_delay_s = 0;
  // The bubble prediction's error p90, as a share of the predicted bubble.
  double bubble_start_error_rel_p90 = 0;
  double bubble_length_error_rel_p90 = 0;
  std::optional<double> ttft_slo_s;  // configuration.prefill.ttft_slo_s
  // Served requests whose TTFT passed the SLO, and of those the ones that
  // arrived during the first iteration (before iterations[0].time_s); none
  // without an SLO.
  std::optional<int> served_over_slo;
  std::optional<int> served_over_slo_first_iteration;
  std::vector<double> ttfts_s;  // every served request's, ascending
};

// What a comparison shows of one results.json.
struct ResultRow {
  std::string label;  // as given on the command line (the column's head)
  std::string experiment;
  std::string runtime;
  std::string schedule;
  std::string placement;
  int streams = 0;
  bool temporal_sharing = false;
  double scale = 1;
  int iterations = 0;
  double iteration_s = 0;              // mean_iteration_s
  double utilization = 0;              // mean_gpu_utilization
  double bubble = 0;                   // mean_bubble_fraction
  double wan_bytes_per_iteration = 0;  // summed over links, mean over iterations (as sent, scaled)
  int steps_per_iteration = 1;         // training steps an iteration holds (DiLoCo: inner steps)
  double step_s() const { return iteration_s / steps_per_iteration; }
  std::optional<PrefillColumns> prefill;     // runs with [prefill] enabled
  std::optional<bool> emulation_kept_up;     // real runs: whether the emulation kept up
  std::string emulation_verdict;             // and the line that says so
  EmulationFigures emulation;                // and what it rests on
  std::optional<TrainingSlowdown> slowdown;  // real runs: against the same plan simulated, by cause
};

ResultRow result_row(const ResultsDigest& results, const std::string& label);
// Reads DIR/results.json, or the file itself if `path` is a file, as a stream
// (read_results_digest): only what the table shows is read and checked.
// Throws ResultsError "FILE: what is wrong" (missing file, bad JSON with its
// line and column, a missing or mistyped field named with where it sits).
ResultRow read_result(const std::string& path);
ResultRow parse_result(std::string_view json_text, const std::string& label);

// The table: a column per result, a line per figure; text from the files
// (names, labels) escaped and cut to 40 characters; speedup is the first
// result's iteration time over each one's. When any result ran prefill, the
// prefill figures follow (utilization without and with prefill, prefill
// tokens/s, TTFT, requests, training delay), "-" for a result without.
std::string compare_table(const std::vector<ResultRow>& rows);
// The same table in Markdown: a column per result, the same lines and notes,
// '|' in a cell escaped.
std::string compare_markdown(const std::vector<ResultRow>& rows);

// The columns of compare_csv, in order (docs/REPORTS.md says what each holds).
std::vector<std::string_view> compare_csv_columns();
// A header of compare_csv_columns(), then a line per result: numbers as the
// shortest text that reads back as the same double, text escaped as in the
// table but not cut (quoted where it holds ',' or '"'), the prefill columns
// empty for a result without prefill, the TTFTs also where nothing was served
// and the SLO counts where no SLO was written.
std::string compare_csv(const std::vector<ResultRow>& rows);
// "percentile,ttft_s", then a line per served request in TTFT order: the share
// of the served requests up to it (%, two decimals) and its TTFT (s, four
// decimals). Throws ResultsError "LABEL: ran without prefill: no TTFTs".
std::string ttft_csv(const ResultRow& row);

}  // namespace wanlab::harness
