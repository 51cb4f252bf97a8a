#include "wanlab/harness/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "json_read.hpp"
#include "wanlab/base/files.hpp"

namespace wanlab::harness {
namespace {

using run_detail::JsonValue;

class Fields {
 public:
  Fields(const JsonValue& object, std::string where) : object_(object), where_(std::move(where)) {}

  bool has(std::string_view key) const { return object_.find(key) != nullptr; }
  const JsonValue& member(std::string_view key) const {
    const JsonValue* value = object_.find(key);
    if (!value) throw std::runtime_error(fmt::format("{}: no \"{}\"", where_, key));
    return *value;
  }
  double number(std::string_view key) const {
    const double* n = member(key).number();
    if (!n) throw std::runtime_error(fmt::format("{}: \"{}\" is not a number", where_, key));
    return *n;
  }
  std::string text(std::string_view key) const {
    const JsonValue& value = member(key);
    if (const std::string* s = value.string()) return *s;
    // An explicit placement is a list of DCs.
    if (const auto* items = value.array()) {
      std::string joined;
      for (const auto& item : *items)
        if (const std::string* s = item.string()) joined += (joined.empty() ? "" : ",") + *s;
      return joined;
    }
    throw std::runtime_error(fmt::format("{}: \"{}\" is not a string", where_, key));
  }
  bool flag(std::string_view key) const {
    const bool* b = member(key).boolean();
    if (!b) throw std::runtime_error(fmt::format("{}: \"{}\" is not true or false", where_, key));
    return *b;
  }
  Fields object(std::string_view key) const {
    const JsonValue& value = member(key);
    if (!value.object()) throw std::runtime_error(fmt::format("{}: \"{}\" is not an object", where_, key));
    return Fields(value, where_ + "." + std::string(key));
  }
  const JsonValue::Array& array(std::string_view key) const {
    const auto* items = member(key).array();
    if (!items) throw std::runtime_error(fmt::format("{}: \"{}\" is not an array", where_, key));
    return *items;
  }

 private:
  const JsonValue& object_;
  std::string where_;
};

double wan_bytes_per_iteration(const JsonValue::Array& iterations, const std::string& where) {
  if (iterations.empty()) return 0;
  double total = 0;
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const Fields iteration(iterations[i], fmt::format("{}.iterations[{}]", where, i));
    const JsonValue& links = iteration.member("wan_bytes");
    if (!links.object()) throw std::runtime_error(fmt::format("{}.iterations[{}]: \"wan_bytes\" is not an object", where, i));
    for (const auto& [link, bytes] : *links.object()) {
      if (!bytes.number())
        throw std::runtime_error(fmt::format("{}.iterations[{}].wan_bytes: \"{}\" is not a number", where, i, link));
      total += *bytes.number();
    }
  }
  return total / static_cast<double>(iterations.size());
}

std::string megabytes(double bytes) { return fmt::format("{:.1f}", bytes / 1e6); }

PrefillColumns prefill_columns(const Fields& prefill) {
  PrefillColumns columns;
  columns.utilization = prefill.number("mean_gpu_utilization");
  columns.tokens_per_s = prefill.number("prefill_tokens_per_s");
  const Fields ttft = prefill.object("ttft_s");
  columns.ttft_p50_s = ttft.number("p50");
  columns.ttft_p99_s = ttft.number("p99");
  const Fields requests = prefill.object("requests");
  columns.served = static_cast<int>(requests.number("served"));
  columns.rejected = static_cast<int>(requests.number("rejected"));
  columns.failed = static_cast<int>(requests.number("failed"));
  columns.training_delay_s = prefill.number("training_delay_s");
  return columns;
}

std::string prefill_table(const std::vector<ResultRow>& rows, std::size_t label_width) {
  std::string out = fmt::format("\n{:<{}}  {:>9} {:>7} {:>7} {:>10} {:>9} {:>9} {:>7} {:>8} {:>6} {:>9}\n", "PREFILL",
                                label_width, "ITER (s)", "UTIL", "UTIL+PF", "PF TOK/S", "TTFT p50", "TTFT p99", "SERVED",
                                "REJECTED", "FAILED", "DELAY (s)");
  for (const auto& row : rows) {
    if (!row.prefill) {
      out += fmt::format("{:<{}}  {:>9.3f} {:>6.1f}% {:>7} {:>10} {:>9} {:>9} {:>7} {:>8} {:>6} {:>9}\n", row.label,
                         label_width, row.iteration_s, 100 * row.utilization, "-", "-", "-", "-", "-", "-", "-", "-");
      continue;
    }
    const PrefillColumns& p = *row.prefill;
    out += fmt::format("{:<{}}  {:>9.3f} {:>6.1f}% {:>6.1f}% {:>10.0f} {:>8.2f}s {:>8.2f}s {:>7} {:>8} {:>6} {:>9.3f}\n",
                       row.label, label_width, row.iteration_s, 100 * row.utilization, 100 * p.utilization,
                       p.tokens_per_s, p.ttft_p50_s, p.ttft_p99_s, p.served, p.rejected, p.failed, p.training_delay_s);
  }
  return out + "UTIL = training only; UTIL+PF = training and prefill; PF TOK/S = prompt tokens prefilled per second; "
               "DELAY = training compute held up by prefill\n";
}

}  // namespace

ResultRow parse_result(std::string_view json_text, const std::string& label) {
  JsonValue root;
  try {
    root = run_detail::parse_json(json_text);
  } catch (const run_detail::JsonError& error) {
    throw std::runtime_error(fmt::format("{}: {}", label, error.what()));
  }
  if (!root.object()) throw std::runtime_error(label + ": not a JSON object");
  const Fields results(root, label);
  const Fields config = results.object("configuration");
  ResultRow row;
  row.label = label;
  row.experiment = results.text("experiment");
  row.runtime = results.text("runtime");
  row.iteration_s = results.number("mean_iteration_s");
  row.utilization = results.number("mean_gpu_utilization");
  row.bubble = results.number("mean_bubble_fraction");
  const auto& iterations = results.array("iterations");
  row.iterations = static_cast<int>(iterations.size());
  row.wan_bytes_per_iteration = wan_bytes_per_iteration(iterations, label);
  row.schedule = config.text("schedule");
  row.placement = config.text("placement");
  row.streams = static_cast<int>(config.number("streams"));
  row.temporal_sharing = config.flag("temporal_sharing");
  row.scale = config.number("scale");
  if (results.has("prefill")) row.prefill = prefill_columns(results.object("prefill"));
  return row;
}

constexpr std::size_t kMaxResultsBytes = 256u << 20;

ResultRow read_result(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file = fs::is_directory(path) ? fs::path(path) / "results.json" : fs::path(path);
  std::string text;
  try {
    // results.json holds per-iteration summaries, not events: far below this.
    text = base::read_regular_file(file.string(), base::ReadRules{kMaxResultsBytes, true});
  } catch (const base::FileError& error) {
    throw std::runtime_error(fmt::format("{}: cannot read results: {}", file.string(), error.reason()));
  }
  return parse_result(text, path);
}

std::string compare_table(const std::vector<ResultRow>& rows) {
  std::size_t label_width = 6;
  for (const auto& row : rows) label_width = std::max(label_width, row.label.size());
  std::string out = fmt::format("{:<{}}  {:<8} {:<14} {:>7} {:>3}  {:<8} {:>9} {:>6} {:>7} {:>11} {:>8}\n", "RESULT",
                                label_width, "SCHEDULE", "PLACEMENT", "STREAMS", "TS", "RUNTIME", "ITER (s)", "UTIL",
                                "BUBBLE", "WAN MB/ITER", "SPEEDUP");
  for (const auto& row : rows) {
    const double speedup = row.iteration_s > 0 ? rows.front().iteration_s / row.iteration_s : 0;
    out += fmt::format("{:<{}}  {:<8} {:<14} {:>7} {:>3}  {:<8} {:>9.3f} {:>5.1f}% {:>6.1f}% {:>11} {:>7.2f}x\n",
                       row.label, label_width, row.schedule, row.placement, row.streams,
                       row.temporal_sharing ? "on" : "off", row.runtime, row.iteration_s, 100 * row.utilization,
                       100 * row.bubble, megabytes(row.wan_bytes_per_iteration), speedup);
  }
  bool mixed_scale = false;
  for (const auto& row : rows) mixed_scale |= row.scale != rows.front().scale;
  out += "TS = temporal sharing; WAN MB/ITER as sent (scaled by each run's scale)";
  out += mixed_scale ? "; scales differ between these results\n" : "\n";
  if (std::any_of(rows.begin(), rows.end(), [](const ResultRow& row) { return row.prefill.has_value(); }))
    out += prefill_table(rows, label_width);
  return out;
}

}  // namespace wanlab::harness
