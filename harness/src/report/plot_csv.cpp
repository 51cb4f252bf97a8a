// CSV files: the harness's writer and reader, and `wanlab plot`'s CSV ->
// LinePlot (line_plot.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "report/csv.hpp"
#include "experiment/text.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/harness/report/line_plot.hpp"

namespace wanlab::harness {
namespace detail {

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) row += (i ? "," : "") + csv_field(fields[i]);
  return row + "\n";
}

namespace {

// One record from `pos` (which it advances past the record's line break);
// `line` counts the lines it consumed.
std::vector<std::string> read_record(std::string_view text, std::size_t& pos, int& line, const std::string& path) {
  std::vector<std::string> fields(1);
  const int first_line = line;
  bool quoted = false;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (quoted) {
      if (c == '"' && pos < text.size() && text[pos] == '"') {
        fields.back() += '"', ++pos;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      ++line;
      break;
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted) throw PlotError(fmt::format("{}:{}: a quoted field is not closed", path, first_line));
  return fields;
}

}  // namespace

CsvTable read_csv(std::string_view text, const std::string& path) {
  CsvTable table;
  std::size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    const int record_line = line;
    if (text[pos] == '#' || text[pos] == '\n' || text[pos] == '\r') {
      const std::size_t end = text.find('\n', pos);
      pos = end == std::string_view::npos ? text.size() : end + 1;
      ++line;
      continue;
    }
    std::vector<std::string> fields = read_record(text, pos, line, path);
    if (table.header.empty()) {
      table.header = std::move(fields);
      continue;
    }
    if (fields.size() != table.header.size())
      throw PlotError(
          fmt::format("{}:{}: {} fields; the header has {}", path, record_line, fields.size(), table.header.size()));
    table.rows.push_back(std::move(fields));
    table.lines.push_back(record_line);
  }
  if (table.header.empty()) throw PlotError(fmt::format("{}: no header line", path));
  return table;
}

}  // namespace detail

namespace {

constexpr std::size_t kColumnsShown = 12;
constexpr std::size_t kColumnNameShown = 32;

// The header's names for an error, escaped and cut, when it is a CSV header:
// a first line without a comma may be any file's (a link to /etc/shadow), and
// is not shown.
std::string columns_shown(const std::vector<std::string>& header) {
  if (header.size() < 2) return " (the first line has no comma: not a CSV table)";
  std::vector<std::string> names;
  for (std::size_t i = 0; i < header.size() && i < kColumnsShown; ++i)
    names.push_back(base::escaped(header[i], kColumnNameShown));
  if (header.size() > kColumnsShown) names.push_back(fmt::format("... ({} in all)", header.size()));
  return fmt::format(" (columns: {})", detail::join(names));
}

std::size_t column_of(const detail::CsvTable& table, const std::string& path, const std::string& column) {
  const auto found = std::find(table.header.begin(), table.header.end(), column);
  if (found == table.header.end())
    throw PlotError(fmt::format("{}: no column {}{}", path, base::quoted(column), columns_shown(table.header)));
  return static_cast<std::size_t>(found - table.header.begin());
}

double number(const std::string& path, int line, const std::string& column, const std::string& text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw PlotError(fmt::format("{}:{}: {}: {} is not a number", path, line, column, base::quoted(text)));
  if (!std::isfinite(value))
    throw PlotError(fmt::format("{}:{}: {}: {} is not finite", path, line, column, base::quoted(text)));
  return value;
}

bool not_measured(const std::string& cell) { return cell.empty() || cell == "nan" || cell == "-"; }

}  // namespace

LinePlot plot_from_csv(std::string_view csv_text, const std::string& path, const CsvPlotOptions& options) {
  if (options.ys.empty()) throw PlotError("plot: no y column");
  const detail::CsvTable table = detail::read_csv(csv_text, path);
  const std::size_t x = column_of(table, path, options.x);
  std::vector<std::size_t> ys;
  for (const auto& y : options.ys) ys.push_back(column_of(table, path, y));
  const std::size_t series = options.series.empty() ? 0 : column_of(table, path, options.series);

  LinePlot plot{options.title,
                options.x_label.empty() ? options.x : options.x_label,
                options.y_label.empty() ? detail::join(options.ys) : options.y_label,
                {},
                options.percent,
                options.y_min,
                {}};
  std::map<std::string, std::size_t> index_of;  // a series' name -> its place, in order of first appearance
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    for (std::size_t k = 0; k < ys.size(); ++k) {
      if (not_measured(row[ys[k]])) continue;
      const std::string name = options.series.empty() ? options.ys[k]
                               : ys.size() == 1       ? row[series]
                                                      : row[series] + " " + options.ys[k];
      auto [slot, added] = index_of.emplace(name, plot.series.size());
      if (added) plot.series.push_back({name, {}});
      plot.series[slot->second].points.emplace_back(number(path, table.lines[r], options.x, row[x]),
                                                    number(path, table.lines[r], options.ys[k], row[ys[k]]));
    }
  }
  if (plot.series.empty()) throw PlotError(fmt::format("{}: no points to plot", path));
  return plot;
}

}  // namespace wanlab::harness
