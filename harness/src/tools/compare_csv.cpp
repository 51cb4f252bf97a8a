// `wanlab compare --csv` and `--ttfts`: the figures the table shows, and a
// run's TTFTs, for scripts (bench/harness/*.sh read results only this way).
#include <fmt/format.h>

#include <functional>
#include <string_view>

#include "wanlab/base/parse.hpp"
#include "wanlab/harness/tools/compare.hpp"

namespace wanlab::harness {
namespace {

// A text cell: escaped as the table escapes it, never cut; quoted where a
// ',' or '"' would split or open it.
std::string text_cell(const std::string& text) {
  const std::string shown = base::escaped(text, std::string::npos);
  if (shown.find_first_of(",\"") == std::string::npos) return shown;
  std::string out = "\"";
  for (const char c : shown) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A number as the shortest text that reads back as the same double.
std::string number(double value) { return fmt::format("{}", value); }
std::string number(const std::optional<double>& value) { return value ? number(*value) : ""; }
std::string count(const std::optional<int>& value) { return value ? std::to_string(*value) : ""; }

struct Column {
  std::string_view name;
  std::function<std::string(const ResultRow&)> cell;
};

// A prefill column: empty for a result without prefill.
Column prefill(std::string_view name, std::function<std::string(const PrefillColumns&)> cell) {
  return {name, [cell = std::move(cell)](const ResultRow& r) { return r.prefill ? cell(*r.prefill) : ""; }};
}

// An emulation column: empty for a simulated result.
Column emulation(std::string_view name, std::function<std::string(const EmulationFigures&)> cell) {
  return {name, [cell = std::move(cell)](const ResultRow& r) { return r.emulation_kept_up ? cell(r.emulation) : ""; }};
}

// A slowdown column: empty for a simulated result.
Column slowdown(std::string_view name, std::function<double(const TrainingSlowdown&)> cell) {
  return {name, [cell = std::move(cell)](const ResultRow& r) { return r.slowdown ? number(cell(*r.slowdown)) : ""; }};
}

// The columns, in order: what docs/REPORTS.md lists.
const std::vector<Column>& columns() {
  using R = const ResultRow&;
  using P = const PrefillColumns&;
  using E = const EmulationFigures&;
  using S = const TrainingSlowdown&;
  static const std::vector<Column> table = {
      {"label", [](R r) { return text_cell(r.label); }},
      {"experiment", [](R r) { return text_cell(r.experiment); }},
      {"runtime", [](R r) { return text_cell(r.runtime); }},
      {"schedule", [](R r) { return text_cell(r.schedule); }},
      {"placement", [](R r) { return text_cell(r.placement); }},
      {"streams", [](R r) { return std::to_string(r.streams); }},
      {"temporal_sharing", [](R r) { return std::string(r.temporal_sharing ? "true" : "false"); }},
      {"scale", [](R r) { return number(r.scale); }},
      {"iterations", [](R r) { return std::to_string(r.iterations); }},
      {"iteration_s", [](R r) { return number(r.iteration_s); }},
      {"utilization", [](R r) { return number(r.utilization); }},
      {"bubble", [](R r) { return number(r.bubble); }},
      {"wan_mb_per_iteration", [](R r) { return number(r.wan_bytes_per_iteration / 1e6); }},
      prefill("utilization_with_prefill", [](P p) { return number(p.utilization); }),
      prefill("prefill_tokens_per_s", [](P p) { return number(p.tokens_per_s); }),
      prefill("ttft_p50_s", [](P p) { return number(p.ttft_p50_s); }),
      prefill("ttft_p99_s", [](P p) { return number(p.ttft_p99_s); }),
      prefill("served", [](P p) { return std::to_string(p.served); }),
      prefill("rejected", [](P p) { return std::to_string(p.rejected); }),
      prefill("failed", [](P p) { return std::to_string(p.failed); }),
      prefill("training_delay_s", [](P p) { return number(p.training_delay_s); }),
      prefill("ttft_slo_s", [](P p) { return number(p.ttft_slo_s); }),
      prefill("served_over_slo", [](P p) { return count(p.served_over_slo); }),
      prefill("served_over_slo_first_iteration", [](P p) { return count(p.served_over_slo_first_iteration); }),
      {"emulation_kept_up",
       [](R r) { return r.emulation_kept_up ? std::string(*r.emulation_kept_up ? "true" : "false") : ""; }},
      emulation("wake_late_share", [](E e) { return number(e.wake_late_share); }),
      emulation("wake_late_p99_ms", [](E e) { return number(e.wake_late_p99_ms); }),
      emulation("cpu_busy_mean", [](E e) { return number(e.cpu_mean); }),
      emulation("cpu_saturated_share", [](E e) { return number(e.cpu_saturated_share); }),
      emulation("releaser_late_share", [](E e) { return number(e.releaser_late_share); }),
      slowdown("planned_iteration_s", [](S s) { return s.planned_s; }),
      slowdown("slowdown_transfers_s", [](S s) { return s.causes.transfers_s; }),
      slowdown("slowdown_link_gate_s", [](S s) { return s.causes.link_gate_s; }),
      slowdown("slowdown_gpu_held_s", [](S s) { return s.causes.gpu_held_s; }),
      slowdown("slowdown_wake_ups_s", [](S s) { return s.causes.wake_ups_s; }),
      slowdown("slowdown_other_s", [](S s) { return s.causes.other_s; }),
      {"steps_per_iteration", [](R r) { return std::to_string(r.steps_per_iteration); }},
      {"step_s", [](R r) { return number(r.step_s()); }},
      prefill("bubble_start_error_rel_p90", [](P p) { return number(p.bubble_start_error_rel_p90); }),
      prefill("bubble_length_error_rel_p90", [](P p) { return number(p.bubble_length_error_rel_p90); }),
      emulation("cpu_stolen_mean", [](E e) { return number(e.cpu_stolen_mean); }),
  };
  return table;
}

}  // namespace

std::vector<std::string_view> compare_csv_columns() {
  std::vector<std::string_view> names;
  for (const Column& column : columns()) names.push_back(column.name);
  return names;
}

std::string compare_csv(const std::vector<ResultRow>& rows) {
  std::string out = fmt::format("{}\n", fmt::join(compare_csv_columns(), ","));
  for (const ResultRow& row : rows) {
    std::vector<std::string> cells;
    for (const Column& column : columns()) cells.push_back(column.cell(row));
    out += fmt::format("{}\n", fmt::join(cells, ","));
  }
  return out;
}

std::string ttft_csv(const ResultRow& row) {
  if (!row.prefill) throw ResultsError(fmt::format("{}: ran without prefill: no TTFTs", base::escaped(row.label)));
  const std::vector<double>& ttfts = row.prefill->ttfts_s;
  std::string out = "percentile,ttft_s\n";
  for (std::size_t i = 0; i < ttfts.size(); ++i)
    out += fmt::format("{:.2f},{:.4f}\n", 100.0 * static_cast<double>(i + 1) / static_cast<double>(ttfts.size()),
                       ttfts[i]);
  return out;
}

}  // namespace wanlab::harness
