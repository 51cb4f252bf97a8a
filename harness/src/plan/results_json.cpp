// results.json's one codec: Results to JSON and back. The writer and the
// reader sit side by side so that a field is named in one file; the round
// trip is tested (tests/unit/harness_results.cpp).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <utility>

#include "wanlab/base/files.hpp"
#include "wanlab/harness/results.hpp"

namespace wanlab::harness {
namespace {

using Json = nlohmann::ordered_json;

// A request_outcomes row's columns.
constexpr const char* kRequestColumns[] = {"id", "arrival_s", "prompt_tokens", "state", "ttft_s", "reason"};

// --- writing ---

Json percentiles_json(const TransferPercentiles& p) { return {{"p50", p.p50_s}, {"p90", p.p90_s}, {"p99", p.p99_s}}; }

Json transfer_times_json(const TransferTimes& times) {
  Json json = {{"messages", times.transfer.messages},
               {"transfer_s", percentiles_json(times.transfer)},
               {"wait_s", percentiles_json(times.wait)}};
  if (times.retransmitted_segments) json["retransmitted_segments"] = *times.retransmitted_segments;
  return json;
}

Json transfers_json(const std::vector<LinkTransfers>& links) {
  Json json = Json::object();
  for (const LinkTransfers& link : links) {
    Json& entry = json[link.link] = Json::object();
    if (link.measured) entry["measured"] = transfer_times_json(*link.measured);
    if (link.simulated) entry["simulated"] = transfer_times_json(*link.simulated);
  }
  return json;
}

template <typename Pairs>
Json object_of(const Pairs& pairs) {
  Json json = Json::object();
  for (const auto& [key, value] : pairs) json[key] = value;
  return json;
}

Json iteration_json(const IterationSummary& summary) {
  Json json = Json::object();
  json["index"] = summary.index;
  json["time_s"] = summary.time_s;
  json["tokens_per_s"] = summary.tokens_per_s;
  json["mean_gpu_utilization"] = summary.mean_gpu_utilization;
  json["bubble_fraction"] = summary.bubble_fraction;
  json["network_blocked_s"] = summary.network_blocked_s;
  json["gpu_utilization"] = summary.gpu_utilization;
  json["wan_bytes"] = object_of(summary.wan_bytes);
  return json;
}

// A figure that may not exist (no request served: no TTFT) is null.
Json or_null(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

Json request_json(const RequestRow& row) {
  // The columns of kRequestColumns, in its order.
  return Json::array({row.id, row.arrival_s, row.prompt_tokens, row.state, or_null(row.ttft_s), row.reason});
}

Json prefill_json(const PrefillResults& prefill) {
  const PrefillSummary& s = prefill.summary;
  Json json = Json::object();
  json["mean_gpu_utilization"] = s.mean_gpu_utilization;
  json["mean_training_utilization"] = s.mean_training_utilization;
  json["gpu_utilization"] = s.gpu_utilization;
  json["prefill_tokens_per_s"] = s.prefill_tokens_per_s;
  json["requests"] = {{"arrived", s.requests},
                      {"served", s.served},
                      {"rejected", s.rejected},
                      {"failed", s.failed},
                      {"unfinished", s.unfinished}};
  json["ttft_s"] = {{"p50", or_null(s.ttft_p50_s)}, {"p90", or_null(s.ttft_p90_s)}, {"p99", or_null(s.ttft_p99_s)}};
  json["kv_bytes"] = object_of(s.kv_bytes);
  json["bubble_prediction_error_s"] = {{"start_p50", s.prediction_start_error_p50_s},
                                       {"start_p90", s.prediction_start_error_p90_s},
                                       {"length_p50", s.prediction_length_error_p50_s},
                                       {"length_p90", s.prediction_length_error_p90_s}};
  json["training_delay_s"] = s.training_delay_s;
  json["notes"] = prefill.notes;
  Json& rows = json["request_outcomes"] = Json::array();
  for (const RequestRow& row : prefill.requests) rows.push_back(request_json(row));
  return json;
}

// --- reading ---

// The members of one object, with errors that name where it sits
// ("runs/x/results.json.iterations[2]") and the member.
class Fields {
 public:
  Fields(const Json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) fail("is not an object");
  }

  const std::string& where() const { return where_; }
  bool has(std::string_view key) const { return object_.contains(std::string(key)); }
  const Json& member(std::string_view key) const {
    const auto it = object_.find(std::string(key));
    if (it == object_.end()) fail(fmt::format("no \"{}\"", key));
    return *it;
  }
  // null stands for a value that was not finite (JSON has no inf or nan).
  double number(std::string_view key) const { return number_of(member(key), key); }
  // null stands for a figure that does not exist (a TTFT with nothing served).
  std::optional<double> optional_number(std::string_view key) const {
    const Json& value = member(key);
    if (value.is_null()) return std::nullopt;
    return number_of(value, key);
  }
  template <typename Int>
  Int whole(std::string_view key) const {
    return whole_of<Int>(member(key), key);
  }
  std::string text(std::string_view key) const {
    const Json& value = member(key);
    if (!value.is_string()) fail(fmt::format("\"{}\" is not a string", key));
    return value.get<std::string>();
  }
  bool flag(std::string_view key) const {
    const Json& value = member(key);
    if (!value.is_boolean()) fail(fmt::format("\"{}\" is not true or false", key));
    return value.get<bool>();
  }
  Fields object(std::string_view key) const { return Fields(member(key), fmt::format("{}.{}", where_, key)); }
  const Json& array(std::string_view key) const {
    const Json& value = member(key);
    if (!value.is_array()) fail(fmt::format("\"{}\" is not an array", key));
    return value;
  }
  std::vector<double> numbers(std::string_view key) const {
    std::vector<double> values;
    for (const Json& item : array(key)) values.push_back(number_of(item, key));
    return values;
  }
  std::vector<std::string> texts(std::string_view key) const {
    std::vector<std::string> values;
    for (const Json& item : array(key)) {
      if (!item.is_string()) fail(fmt::format("\"{}\" holds a value that is not a string", key));
      values.push_back(item.get<std::string>());
    }
    return values;
  }
  // An object of byte counts ("east->west": 1000).
  std::vector<std::pair<std::string, std::uint64_t>> counts(std::string_view key) const {
    const Fields members = object(key);
    std::vector<std::pair<std::string, std::uint64_t>> values;
    for (const std::string& name : members.keys()) values.emplace_back(name, members.whole<std::uint64_t>(name));
    return values;
  }

  const Json& json() const { return object_; }
  std::vector<std::string> keys() const {
    std::vector<std::string> names;
    for (const auto& item : object_.items()) names.push_back(item.key());
    return names;
  }

  [[noreturn]] void fail(const std::string& what) const { throw ResultsError(fmt::format("{}: {}", where_, what)); }

 private:
  double number_of(const Json& value, std::string_view key) const {
    if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!value.is_number()) fail(fmt::format("\"{}\" is not a number", key));
    return value.get<double>();
  }
  template <typename Int>
  Int whole_of(const Json& value, std::string_view key) const {
    if (!value.is_number_integer()) fail(fmt::format("\"{}\" is not a whole number", key));
    const bool fits = value.is_number_unsigned() ? std::in_range<Int>(value.get<std::uint64_t>())
                                                 : std::in_range<Int>(value.get<std::int64_t>());
    if (!fits) fail(fmt::format("\"{}\" is out of range", key));
    return value.get<Int>();
  }

  const Json& object_;
  std::string where_;
};

// An array's items as Fields named "where.key[i]".
template <typename Read>
auto each_object(const Fields& fields, std::string_view key, Read read) {
  std::vector<decltype(read(std::declval<const Fields&>()))> values;
  const Json& items = fields.array(key);
  for (std::size_t i = 0; i < items.size(); ++i)
    values.push_back(read(Fields(items[i], fmt::format("{}.{}[{}]", fields.where(), key, i))));
  return values;
}

TransferPercentiles percentiles_from(const Fields& fields, std::size_t messages) {
  return {messages, fields.number("p50"), fields.number("p90"), fields.number("p99")};
}

TransferTimes transfer_times_from(const Fields& fields) {
  const auto messages = fields.whole<std::size_t>("messages");
  TransferTimes times{percentiles_from(fields.object("transfer_s"), messages),
                      percentiles_from(fields.object("wait_s"), messages), std::nullopt};
  if (fields.has("retransmitted_segments"))
    times.retransmitted_segments = fields.whole<std::uint64_t>("retransmitted_segments");
  return times;
}

std::vector<LinkTransfers> transfers_from(const Fields& fields) {
  std::vector<LinkTransfers> links;
  const Fields transfers = fields.object("transfers");
  for (const std::string& name : transfers.keys()) {
    const Fields link = transfers.object(name);
    LinkTransfers entry{name, std::nullopt, std::nullopt};
    if (link.has("measured")) entry.measured = transfer_times_from(link.object("measured"));
    if (link.has("simulated")) entry.simulated = transfer_times_from(link.object("simulated"));
    links.push_back(std::move(entry));
  }
  return links;
}

IterationSummary iteration_from(const Fields& fields) {
  IterationSummary summary;
  summary.index = fields.whole<int>("index");
  summary.time_s = fields.number("time_s");
  summary.tokens_per_s = fields.number("tokens_per_s");
  summary.mean_gpu_utilization = fields.number("mean_gpu_utilization");
  summary.bubble_fraction = fields.number("bubble_fraction");
  summary.network_blocked_s = fields.number("network_blocked_s");
  summary.gpu_utilization = fields.numbers("gpu_utilization");
  summary.wan_bytes = fields.counts("wan_bytes");
  return summary;
}

RequestRow request_from(const Json& row, const std::string& where) {
  constexpr std::size_t kColumns = std::size(kRequestColumns);
  if (!row.is_array() || row.size() != kColumns)
    throw ResultsError(fmt::format("{}: is not [id, arrival_s, prompt_tokens, state, ttft_s, reason]", where));
  // The row's cells by their column's name, so that errors name the column.
  Json cells = Json::object();
  for (std::size_t i = 0; i < kColumns; ++i) cells[kRequestColumns[i]] = row[i];
  const Fields fields(cells, where);
  RequestRow out;
  out.id = fields.whole<int>("id");
  out.arrival_s = fields.number("arrival_s");
  out.prompt_tokens = fields.whole<int>("prompt_tokens");
  out.state = fields.text("state");
  if (!cells["ttft_s"].is_null()) out.ttft_s = fields.number("ttft_s");
  out.reason = fields.text("reason");
  return out;
}

PrefillResults prefill_from(const Fields& fields) {
  PrefillResults prefill;
  PrefillSummary& s = prefill.summary;
  s.mean_gpu_utilization = fields.number("mean_gpu_utilization");
  s.mean_training_utilization = fields.number("mean_training_utilization");
  s.gpu_utilization = fields.numbers("gpu_utilization");
  s.prefill_tokens_per_s = fields.number("prefill_tokens_per_s");
  const Fields requests = fields.object("requests");
  s.requests = requests.whole<int>("arrived");
  s.served = requests.whole<int>("served");
  s.rejected = requests.whole<int>("rejected");
  s.failed = requests.whole<int>("failed");
  s.unfinished = requests.whole<int>("unfinished");
  const Fields ttft = fields.object("ttft_s");
  s.ttft_p50_s = ttft.optional_number("p50");
  s.ttft_p90_s = ttft.optional_number("p90");
  s.ttft_p99_s = ttft.optional_number("p99");
  s.kv_bytes = fields.counts("kv_bytes");
  const Fields prediction = fields.object("bubble_prediction_error_s");
  s.prediction_start_error_p50_s = prediction.number("start_p50");
  s.prediction_start_error_p90_s = prediction.number("start_p90");
  s.prediction_length_error_p50_s = prediction.number("length_p50");
  s.prediction_length_error_p90_s = prediction.number("length_p90");
  s.training_delay_s = fields.number("training_delay_s");
  prefill.notes = fields.texts("notes");
  const Json& rows = fields.array("request_outcomes");
  for (std::size_t i = 0; i < rows.size(); ++i)
    prefill.requests.push_back(request_from(rows[i], fmt::format("{}.request_outcomes[{}]", fields.where(), i)));
  return prefill;
}

Json parse_document(std::string_view text, const std::string& label) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    // "[json.exception.parse_error.101] parse error at line 3, column 13: ..." -> "line 3, column 13: ..."
    std::string_view what = error.what();
    const auto at = what.find(" at line ");
    throw ResultsError(fmt::format("{}: {}", label, at == std::string_view::npos ? what : what.substr(at + 4)));
  }
}

}  // namespace

Json to_json(const Results& r) {
  Json root = Json::object();
  root["experiment"] = r.experiment;
  root["runtime"] = r.runtime;
  if (!r.runtime_detail.empty()) root["runtime_detail"] = r.runtime_detail;
  root["mean_iteration_s"] = r.run.mean_iteration_s;
  root["mean_gpu_utilization"] = r.run.mean_gpu_utilization;
  root["mean_bubble_fraction"] = r.run.mean_bubble_fraction;
  root["mean_tokens_per_s"] = r.run.mean_tokens_per_s;
  root["means_skip_first_iterations"] = r.run.skipped_iterations;
  if (r.prefill) root["prefill"] = prefill_json(*r.prefill);
  Json& iterations = root["iterations"] = Json::array();
  for (const IterationSummary& summary : r.iterations) iterations.push_back(iteration_json(summary));
  root["transfers"] = transfers_json(r.transfers);
  root["configuration"] = r.configuration;
  root["plan"] = r.plan;
  root["seed"] = r.seed;
  root["versions"] = object_of(r.versions);
  root["scenario"] = {{"path", r.scenario_path}, {"text", r.scenario_text}};
  return root;
}

std::string results_text(const Results& results) { return to_json(results).dump(2) + "\n"; }

Results results_from_json(std::string_view text, const std::string& label) {
  const Json root = parse_document(text, label);
  const Fields fields(root, label);
  Results r;
  r.experiment = fields.text("experiment");
  r.runtime = fields.text("runtime");
  if (fields.has("runtime_detail")) r.runtime_detail = fields.text("runtime_detail");
  r.run.mean_iteration_s = fields.number("mean_iteration_s");
  r.run.mean_gpu_utilization = fields.number("mean_gpu_utilization");
  r.run.mean_bubble_fraction = fields.number("mean_bubble_fraction");
  r.run.mean_tokens_per_s = fields.number("mean_tokens_per_s");
  r.run.skipped_iterations = fields.whole<int>("means_skip_first_iterations");
  if (fields.has("prefill")) r.prefill = prefill_from(fields.object("prefill"));
  r.iterations = each_object(fields, "iterations", iteration_from);
  r.transfers = transfers_from(fields);
  r.configuration = fields.object("configuration").json();
  r.plan = fields.object("plan").json();
  r.seed = fields.whole<std::uint64_t>("seed");
  const Fields versions = fields.object("versions");
  for (const std::string& name : versions.keys()) r.versions.emplace_back(name, versions.text(name));
  const Fields scenario = fields.object("scenario");
  r.scenario_path = scenario.text("path");
  r.scenario_text = scenario.text("text");
  configuration_view(r, label);  // what compare reads of the echo is there, or the error names the file
  return r;
}

// results.json holds per-iteration summaries and one row per request, not
// events: far below this.
constexpr std::size_t kMaxResultsBytes = 256u << 20;

Results read_results(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string file = fs::is_directory(path) ? (fs::path(path) / "results.json").string() : path;
  std::string text;
  try {
    text = base::read_regular_file(file, base::ReadRules{kMaxResultsBytes, true});
  } catch (const base::FileError& error) {
    throw ResultsError(fmt::format("{}: cannot read results: {}", file, error.reason()));
  }
  return results_from_json(text, file);
}

ConfigurationView configuration_view(const Results& results, const std::string& label) {
  const Fields config(results.configuration, label + ".configuration");
  ConfigurationView view;
  view.schedule = config.text("schedule");
  // An explicit placement is a list of DCs.
  if (config.member("placement").is_array()) {
    for (const std::string& dc : config.texts("placement")) view.placement += (view.placement.empty() ? "" : ",") + dc;
  } else {
    view.placement = config.text("placement");
  }
  view.streams = config.whole<int>("streams");
  view.temporal_sharing = config.flag("temporal_sharing");
  view.scale = config.number("scale");
  return view;
}

}  // namespace wanlab::harness
