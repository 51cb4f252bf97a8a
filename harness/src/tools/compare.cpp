#include "wanlab/harness/tools/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "wanlab/base/cpu_times.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"

namespace wanlab::harness {
namespace {

// The served requests over the SLO, and of them those that arrived during the first iteration.
void count_over_slo(const ResultsDigest& results, PrefillColumns& columns) {
  if (!results.ttft_slo_s) return;
  int over = 0, first = 0;
  for (const ServedRequest& request : results.served) {
    if (request.ttft_s <= *results.ttft_slo_s) continue;
    ++over;
    if (request.arrival_s < results.first_iteration_s) ++first;
  }
  columns.served_over_slo = over;
  columns.served_over_slo_first_iteration = first;
}

PrefillColumns prefill_columns(const ResultsDigest& results) {
  const PrefillSummary& summary = *results.prefill;
  PrefillColumns columns;
  columns.utilization = summary.mean_gpu_utilization;
  columns.tokens_per_s = summary.prefill_tokens_per_s;
  columns.ttft_p50_s = summary.ttft_p50_s;
  columns.ttft_p99_s = summary.ttft_p99_s;
  columns.served = summary.served;
  columns.rejected = summary.rejected;
  columns.failed = summary.failed;
  columns.training_delay_s = summary.training_delay_s;
  columns.bubble_start_error_rel_p90 = summary.prediction_error_relative.start_p90;
  columns.bubble_length_error_rel_p90 = summary.prediction_error_relative.length_p90;
  columns.ttft_slo_s = results.ttft_slo_s;
  count_over_slo(results, columns);
  columns.ttfts_s.reserve(results.served.size());
  for (const ServedRequest& request : results.served) columns.ttfts_s.push_back(request.ttft_s);
  std::sort(columns.ttfts_s.begin(), columns.ttfts_s.end());
  return columns;
}

// One line of the table: a figure's name and its cell in every result's column.
struct Line {
  std::string name;
  std::vector<std::string> cells;
};

template <typename Cell>
Line line(std::string name, const std::vector<ResultRow>& rows, Cell cell) {
  Line out{std::move(name), {}};
  for (const ResultRow& row : rows) out.cells.push_back(cell(row));
  return out;
}

// A results.json's text in a cell: escaped (a name holding escape codes or a
// newline would reach the terminal as they are) and cut.
constexpr std::size_t kCellShown = 40;
std::string shown(const std::string& text) { return base::escaped(text, kCellShown); }

// A figure that may not exist: "-" (no request served has no TTFT).
std::string seconds_or_dash(const std::optional<double>& seconds) {
  return seconds ? fmt::format("{:.2f}", *seconds) : "-";
}

// A prefill figure: "-" for a result that ran without prefill.
Line prefill_line(std::string name, const std::vector<ResultRow>& rows,
                  const std::function<std::string(const PrefillColumns&)>& cell) {
  return line(std::move(name), rows, [&](const ResultRow& row) { return row.prefill ? cell(*row.prefill) : "-"; });
}

// A real run's verdict on its emulation, with the hypervisor's steal where
// the verdict names it ("kept up, 6% stolen"); "-" for a simulated one.
std::string emulation_cell(const ResultRow& row) {
  if (!row.emulation_kept_up) return "-";
  std::string cell = *row.emulation_kept_up ? "kept up" : "FELL BEHIND";
  if (row.emulation.cpu_stolen_mean >= base::kStolenNamed)
    cell += fmt::format(", {:.0f}% stolen", 100 * row.emulation.cpu_stolen_mean);
  return cell;
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

bool any_rounds(const std::vector<ResultRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const ResultRow& row) { return row.steps_per_iteration > 1; });
}

// A DiLoCo run's iteration is an outer round of many training steps: where
// one is compared, the figures per step come beside those per iteration.
std::vector<Line> step_lines(const std::vector<ResultRow>& rows) {
  if (!any_rounds(rows)) return {};
  return {
      line("steps / iteration", rows, [](const ResultRow& r) { return std::to_string(r.steps_per_iteration); }),
      line("step (s)", rows, [](const ResultRow& r) { return fmt::format("{:.3f}", r.step_s()); }),
      line("WAN MB / step", rows,
           [](const ResultRow& r) {
             return fmt::format("{:.1f}", r.wan_bytes_per_iteration / r.steps_per_iteration / 1e6);
           }),
  };
}

std::vector<Line> training_lines(const std::vector<ResultRow>& rows) {
  const double first = rows.front().step_s();
  std::vector<Line> lines{
      line("experiment", rows, [](const ResultRow& r) { return shown(r.experiment); }),
      line("schedule", rows, [](const ResultRow& r) { return shown(r.schedule); }),
      line("placement", rows, [](const ResultRow& r) { return shown(r.placement); }),
      line("streams", rows, [](const ResultRow& r) { return std::to_string(r.streams); }),
      line("temporal sharing", rows, [](const ResultRow& r) { return std::string(r.temporal_sharing ? "on" : "off"); }),
      line("runtime", rows, [](const ResultRow& r) { return shown(r.runtime); }),
      line("emulation", rows, [](const ResultRow& r) { return emulation_cell(r); }),
      line("scale", rows, [](const ResultRow& r) { return fmt::format("{:g}", r.scale); }),
      line("iterations", rows, [](const ResultRow& r) { return std::to_string(r.iterations); }),
      line("iteration (s)", rows, [](const ResultRow& r) { return fmt::format("{:.3f}", r.iteration_s); }),
      line("vs its plan", rows,
           [](const ResultRow& r) {
             return r.slowdown ? fmt::format("{:+.1f}%", 100 * (r.slowdown->ratio() - 1)) : std::string("-");
           }),
      line("speedup", rows,
           [&](const ResultRow& r) { return fmt::format("{:.2f}x", r.step_s() > 0 ? first / r.step_s() : 0); }),
      line("GPU utilization", rows, [](const ResultRow& r) { return percent(r.utilization); }),
      line("bubble", rows, [](const ResultRow& r) { return percent(r.bubble); }),
      line("WAN MB / iteration", rows,
           [](const ResultRow& r) { return fmt::format("{:.1f}", r.wan_bytes_per_iteration / 1e6); }),
  };
  std::vector<Line> steps = step_lines(rows);
  lines.insert(lines.begin() + 11, steps.begin(), steps.end());  // after "vs its plan", before "speedup"
  return lines;
}

std::vector<Line> prefill_lines(const std::vector<ResultRow>& rows) {
  return {
      prefill_line("utilization + prefill", rows, [](const PrefillColumns& p) { return percent(p.utilization); }),
      prefill_line("prefill tokens/s", rows,
                   [](const PrefillColumns& p) { return fmt::format("{:.0f}", p.tokens_per_s); }),
      prefill_line("TTFT p50 (s)", rows, [](const PrefillColumns& p) { return seconds_or_dash(p.ttft_p50_s); }),
      prefill_line("TTFT p99 (s)", rows, [](const PrefillColumns& p) { return seconds_or_dash(p.ttft_p99_s); }),
      prefill_line("requests served", rows, [](const PrefillColumns& p) { return std::to_string(p.served); }),
      prefill_line("requests rejected", rows, [](const PrefillColumns& p) { return std::to_string(p.rejected); }),
      prefill_line("requests failed", rows, [](const PrefillColumns& p) { return std::to_string(p.failed); }),
      prefill_line("training delay (s)", rows,
                   [](const PrefillColumns& p) { return fmt::format("{:.3f}", p.training_delay_s); }),
  };
}

// The names left-aligned, every column right-aligned to its widest cell.
std::string layout(const std::vector<ResultRow>& rows, const std::vector<Line>& lines) {
  std::size_t name_width = 0;
  std::vector<std::string> labels;
  std::vector<std::size_t> widths;
  for (const ResultRow& row : rows) {
    labels.push_back(shown(row.label));
    widths.push_back(labels.back().size());
  }
  for (const Line& l : lines) {
    name_width = std::max(name_width, l.name.size());
    for (std::size_t i = 0; i < l.cells.size(); ++i) widths[i] = std::max(widths[i], l.cells[i].size());
  }
  auto print = [&](const std::string& name, const std::function<const std::string&(std::size_t)>& cell) {
    std::string out = fmt::format("{:<{}}", name, name_width);
    for (std::size_t i = 0; i < rows.size(); ++i) out += fmt::format("  {:>{}}", cell(i), widths[i]);
    return out + "\n";
  };
  std::string out = print("", [&](std::size_t i) -> const std::string& { return labels[i]; });
  for (const Line& l : lines) out += print(l.name, [&](std::size_t i) -> const std::string& { return l.cells[i]; });
  return out;
}

bool any_prefill(const std::vector<ResultRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const ResultRow& row) { return row.prefill.has_value(); });
}

// The training lines, then the prefill lines when any result ran prefill.
std::vector<Line> table_lines(const std::vector<ResultRow>& rows) {
  std::vector<Line> lines = training_lines(rows);
  if (any_prefill(rows)) {
    std::vector<Line> prefill = prefill_lines(rows);
    lines.insert(lines.end(), prefill.begin(), prefill.end());
  }
  return lines;
}

// What the table's figures mean, under it.
std::string notes(const std::vector<ResultRow>& rows) {
  const bool mixed_scale =
      std::any_of(rows.begin(), rows.end(), [&](const ResultRow& row) { return row.scale != rows.front().scale; });
  std::string out =
      any_rounds(rows)
          ? "speedup: the first result's time per training step over each one's (a DiLoCo iteration is an outer "
            "round of many steps); WAN MB as sent (scaled by each run's scale)"
          : "speedup: the first result's iteration time over each one's; WAN MB as sent (scaled by each run's scale)";
  out += mixed_scale ? "; scales differ between these results\n" : "\n";
  if (any_prefill(rows))
    out +=
        "utilization + prefill: training and prefill; prefill tokens/s: prompt tokens prefilled per second; "
        "training delay: training compute held up by prefill\n";
  for (const ResultRow& row : rows)
    if (row.emulation_kept_up == false)
      out += shown(row.label) + ": " + base::escaped(row.emulation_verdict, 400) + "\n";
  return out;
}

// A Markdown cell: '|' would end it.
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The lines as a Markdown table: the labels as the heads, figures right-aligned.
std::string markdown(const std::vector<ResultRow>& rows, const std::vector<Line>& lines) {
  std::string head = "| |", rule = "|---|";
  for (const ResultRow& row : rows) {
    head += fmt::format(" {} |", markdown_cell(shown(row.label)));
    rule += "---:|";
  }
  std::string out = head + "\n" + rule + "\n";
  for (const Line& l : lines) {
    out += fmt::format("| {} |", l.name);
    for (const std::string& cell : l.cells) out += fmt::format(" {} |", markdown_cell(cell));
    out += "\n";
  }
  return out;
}

}  // namespace

ResultRow result_row(const ResultsDigest& results, const std::string& label) {
  ResultRow row;
  row.label = label;
  row.experiment = results.experiment;
  row.runtime = results.runtime;
  row.schedule = results.configuration.schedule;
  row.placement = results.configuration.placement;
  row.streams = results.configuration.streams;
  row.temporal_sharing = results.configuration.temporal_sharing;
  row.scale = results.configuration.scale;
  row.iterations = static_cast<int>(results.iterations);
  row.iteration_s = results.run.mean_iteration_s;
  row.utilization = results.run.mean_gpu_utilization;
  row.bubble = results.run.mean_bubble_fraction;
  row.steps_per_iteration = std::max(1, results.steps_per_iteration);
  row.wan_bytes_per_iteration =
      results.iterations == 0 ? 0 : results.wan_bytes / static_cast<double>(results.iterations);
  if (results.prefill) row.prefill = prefill_columns(results);
  row.emulation_kept_up = results.emulation_kept_up;
  row.emulation_verdict = results.emulation_verdict;
  row.emulation = results.emulation;
  row.slowdown = results.slowdown;
  return row;
}

ResultRow parse_result(std::string_view json_text, const std::string& label) {
  return result_row(results_digest_from_json(json_text, label), label);
}

ResultRow read_result(const std::string& path) { return result_row(read_results_digest(path), path); }

std::string compare_table(const std::vector<ResultRow>& rows) {
  if (rows.empty()) return "";
  return layout(rows, table_lines(rows)) + notes(rows);
}

std::string compare_markdown(const std::vector<ResultRow>& rows) {
  if (rows.empty()) return "";
  return markdown(rows, table_lines(rows)) + "\n" + notes(rows);
}

}  // namespace wanlab::harness
