// results.json's one codec: Results to JSON and back. The writer and the
// reader sit side by side so that a field is named in one file; the round
// trip is tested (tests/unit/harness_results.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <utility>

#include "record/results_fields.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/late_bounds.hpp"
#include "wanlab/harness/record/results.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"

namespace wanlab::harness {
namespace {

using detail::Fields;
using detail::Json;

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

// A releaser's verdicts: "verdicts", "over_10us" ... "over_10ms" (base::kLateBoundsNs), "max_ns".
Json lateness_json(const ReleaserLateness& r) {
  Json json = {{"verdicts", r.verdicts}};
  for (const auto& [bound, verdicts] : r.over) json["over_" + base::late_bound_key(bound)] = verdicts;
  json["max_ns"] = r.max_ns;
  return json;
}

Json emulation_json(const EmulationHealth& h) {
  Json json = Json::object();
  json["kept_up"] = h.kept_up;
  json["verdict"] = h.verdict;
  json["compute_ops"] = h.compute_ops;
  json["wake_late_ms"] = {{"p50", h.wake_late_p50_ms}, {"p99", h.wake_late_p99_ms}, {"max", h.wake_late_max_ms}};
  json["wake_late_share"] = h.wake_late_share;
  json["cpus"] = h.cpus;
  json["idle_pollers"] = h.idle_pollers;
  json["idle_polled_share"] = h.idle_polled_share;
  json["cpu_busy"] = {{"mean", h.cpu_mean},
                      {"max", h.cpu_max},
                      {"saturated_share", h.cpu_saturated_share},
                      {"stolen_mean", h.cpu_stolen_mean},
                      {"stolen_max", h.cpu_stolen_max}};
  json["release_path"] = h.release_path;
  if (h.releaser) {
    const ReleaserLateness& r = *h.releaser;
    json["releaser"] = lateness_json(r);
    json["releaser"]["dropped"] = r.dropped;
    json["releaser"]["limit_ns"] = h.releaser_limit_ns;
    Json pairs = Json::array();
    for (const PairReleaserLateness& p : h.releaser_pairs) {
      Json pair = {{"from", p.from}, {"to", p.to}};
      pair.update(lateness_json(p.late));
      pairs.push_back(std::move(pair));
    }
    json["releaser"]["pairs"] = std::move(pairs);
  }
  return json;
}

Json slowdown_json(const TrainingSlowdown& s) {
  const SlowdownCauses& c = s.causes;
  return {{"iterations", s.iterations},
          {"iteration_s", s.iteration_s},
          {"planned_iteration_s", s.planned_s},
          {"causes_s",
           {{"gpu_held_by_prefill", c.gpu_held_s},
            {"late_wake_ups", c.wake_ups_s},
            {"link_gate", c.link_gate_s},
            {"transfers", c.transfers_s},
            {"other", c.other_s}}},
          {"op_start_late_ms",
           {{"ops", s.op_start_late.ops},
            {"p50", s.op_start_late.p50_ms},
            {"p99", s.op_start_late.p99_ms},
            {"max", s.op_start_late.max_ms}}}};
}

Json bubble_errors_json(const BubbleErrors& errors) {
  return {{"start_p50", errors.start_p50},
          {"start_p90", errors.start_p90},
          {"length_p50", errors.length_p50},
          {"length_p90", errors.length_p90}};
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
  json["bubble_prediction_error_s"] = bubble_errors_json(s.prediction_error_s);
  json["bubble_prediction_error_relative"] = bubble_errors_json(s.prediction_error_relative);
  json["training_delay_s"] = s.training_delay_s;
  json["notes"] = prefill.notes;
  Json& rows = json["request_outcomes"] = Json::array();
  for (const RequestRow& row : prefill.requests) rows.push_back(request_json(row));
  return json;
}

// --- reading ---

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

PrefillResults prefill_from(const Fields& fields) {
  PrefillResults prefill;
  PrefillSummary& s = prefill.summary = detail::prefill_shown(fields);
  s.mean_training_utilization = fields.number("mean_training_utilization");
  s.gpu_utilization = fields.numbers("gpu_utilization");
  const Fields requests = fields.object("requests");
  s.requests = requests.whole<int>("arrived");
  s.unfinished = requests.whole<int>("unfinished");
  s.ttft_p90_s = fields.object("ttft_s").optional_number("p90");
  s.kv_bytes = fields.counts("kv_bytes");
  s.prediction_error_s = detail::bubble_errors_from(fields.object("bubble_prediction_error_s"));
  prefill.notes = fields.texts("notes");
  const Json& rows = fields.array("request_outcomes");
  for (std::size_t i = 0; i < rows.size(); ++i)
    prefill.requests.push_back(
        detail::request_from(rows[i], fmt::format("{}.request_outcomes[{}]", fields.where(), i)));
  return prefill;
}

Json parse_document(std::string_view text, const std::string& label) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    throw ResultsError(fmt::format("{}: {}", label, detail::json_error(text, error.byte, error)));
  } catch (const Json::exception& error) {  // out_of_range: a number like 1e999
    throw ResultsError(fmt::format("{}: {}", label, detail::json_error(text, std::string_view::npos, error)));
  }
}

}  // namespace

namespace detail {

// --- what the digest (results_digest.cpp) reads the same way ---

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

// results.json's emulation.releaser counters.
ReleaserLateness releaser_from(const Fields& r) {
  ReleaserLateness lateness;
  lateness.verdicts = r.whole<std::uint64_t>("verdicts");
  // Every bound written; files from before the finer bounds have six of them.
  for (const std::uint64_t bound : base::kLateBoundsNs)
    if (const std::string key = "over_" + base::late_bound_key(bound); r.has(key))
      lateness.over[bound] = r.whole<std::uint64_t>(key);
  if (lateness.over.empty()) r.fail("has no \"over_...\" counters");
  lateness.max_ns = r.whole<std::uint64_t>("max_ns");
  // Written since the release queue's drops were counted; 0 in older files.
  if (r.has("dropped")) lateness.dropped = r.whole<std::uint64_t>("dropped");
  return lateness;
}

TrainingSlowdown slowdown_from(const Fields& fields) {
  TrainingSlowdown s;
  s.iterations = fields.whole<int>("iterations");
  s.iteration_s = fields.number("iteration_s");
  s.planned_s = fields.number("planned_iteration_s");
  const Fields c = fields.object("causes_s");
  s.causes = {c.number("gpu_held_by_prefill"), c.number("late_wake_ups"), c.number("link_gate"), c.number("transfers"),
              c.number("other")};
  if (fields.has("op_start_late_ms")) {  // absent from files written before it was measured
    const Fields o = fields.object("op_start_late_ms");
    s.op_start_late = {o.whole<std::size_t>("ops"), o.number("p50"), o.number("p99"), o.number("max")};
  }
  return s;
}

EmulationHealth emulation_from(const Fields& fields) {
  EmulationHealth h;
  h.kept_up = fields.flag("kept_up");
  h.verdict = fields.text("verdict");
  h.compute_ops = fields.whole<std::size_t>("compute_ops");
  const Fields wake = fields.object("wake_late_ms");
  h.wake_late_p50_ms = wake.number("p50");
  h.wake_late_p99_ms = wake.number("p99");
  h.wake_late_max_ms = wake.number("max");
  h.wake_late_share = fields.number("wake_late_share");
  h.cpus = fields.whole<int>("cpus");
  if (fields.has("idle_pollers")) h.idle_pollers = fields.whole<int>("idle_pollers");  // written since idle polling
  // Written since polling could pause; before, pollers polled the whole run.
  h.idle_polled_share =
      fields.has("idle_polled_share") ? fields.number("idle_polled_share") : (h.idle_pollers > 0 ? 1 : 0);
  const Fields cpu = fields.object("cpu_busy");
  h.cpu_mean = cpu.number("mean");
  h.cpu_max = cpu.number("max");
  h.cpu_saturated_share = cpu.number("saturated_share");
  if (cpu.has("stolen_mean")) {  // written since the hypervisor's steal was measured
    h.cpu_stolen_mean = cpu.number("stolen_mean");
    h.cpu_stolen_max = cpu.number("stolen_max");
  }
  h.release_path = fields.text("release_path");
  if (fields.has("releaser")) {
    const Fields r = fields.object("releaser");
    h.releaser = releaser_from(r);
    h.releaser_limit_ns = r.whole<std::uint64_t>("limit_ns");
    if (r.has("pairs"))  // written since verdicts were counted per pair
      h.releaser_pairs = each_object(r, "pairs", [](const Fields& p) {
        return PairReleaserLateness{p.text("from"), p.text("to"), releaser_from(p)};
      });
  }
  return h;
}

// The emulation figures compare shows (the digest reads these alone).
EmulationFigures emulation_figures(const Fields& fields) {
  EmulationFigures f;
  f.wake_late_share = fields.number("wake_late_share");
  f.wake_late_p99_ms = fields.object("wake_late_ms").number("p99");
  const Fields cpu = fields.object("cpu_busy");
  f.cpu_mean = cpu.number("mean");
  f.cpu_saturated_share = cpu.number("saturated_share");
  if (cpu.has("stolen_mean")) f.cpu_stolen_mean = cpu.number("stolen_mean");
  if (fields.has("releaser")) {
    const Fields r = fields.object("releaser");
    const auto limit = r.whole<std::uint64_t>("limit_ns");
    f.releaser_late_share = releaser_late_share(releaser_from(r), limit);
    if (!f.releaser_late_share)
      r.fail(fmt::format("\"limit_ns\" is {}, a bound it has no \"over_...\" counter for", limit));
  }
  return f;
}

// The prefill figures compare shows (the digest reads these alone).
BubbleErrors bubble_errors_from(const Fields& fields) {
  return {fields.number("start_p50"), fields.number("start_p90"), fields.number("length_p50"),
          fields.number("length_p90")};
}

PrefillSummary prefill_shown(const Fields& fields) {
  PrefillSummary s;
  s.mean_gpu_utilization = fields.number("mean_gpu_utilization");
  s.prefill_tokens_per_s = fields.number("prefill_tokens_per_s");
  const Fields requests = fields.object("requests");
  s.served = requests.whole<int>("served");
  s.rejected = requests.whole<int>("rejected");
  s.failed = requests.whole<int>("failed");
  const Fields ttft = fields.object("ttft_s");
  s.ttft_p50_s = ttft.optional_number("p50");
  s.ttft_p99_s = ttft.optional_number("p99");
  s.training_delay_s = fields.number("training_delay_s");
  if (fields.has("bubble_prediction_error_relative"))  // absent from files written before it was reported
    s.prediction_error_relative = bubble_errors_from(fields.object("bubble_prediction_error_relative"));
  return s;
}

// The run's means compare shows.
void read_shown_means(const Fields& fields, RunSummary& run) {
  run.mean_iteration_s = fields.number("mean_iteration_s");
  run.mean_gpu_utilization = fields.number("mean_gpu_utilization");
  run.mean_bubble_fraction = fields.number("mean_bubble_fraction");
}

ConfigurationView view_of(const Fields& config) {
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

namespace {

// What went wrong, without the text the parser stopped at: nlohmann's "last
// read: '...'" and "number overflow parsing '1e999'" quote the file, which may
// be anything, and at any length.
std::string json_problem(const nlohmann::detail::exception& error) {
  if (dynamic_cast<const nlohmann::detail::parse_error*>(&error) == nullptr)
    return error.id == 406 ? "a number past what a double holds" : "not a JSON document the reader can hold";
  // "[json.exception.parse_error.101] parse error at line 3, column 13: WHAT; last read: '...'; expected ..."
  const std::string_view full = error.what();
  const auto column = full.find(", column ");
  const auto start = column == std::string_view::npos ? std::string_view::npos : full.find(": ", column);
  if (start == std::string_view::npos) return "not JSON";
  std::string what(full.substr(start + 2));
  const auto token = what.find("; last read: '");
  if (token != std::string::npos) {
    const auto expected = what.find("; expected ", token);
    what.erase(token, expected == std::string::npos ? std::string::npos : expected - token);
  }
  return what;
}

}  // namespace

std::string json_error(std::string_view text, std::size_t position, const nlohmann::detail::exception& error) {
  const std::string what = base::escaped(json_problem(error), 200);
  if (position == std::string_view::npos) return what;
  // As nlohmann counts: `position` bytes read (the end of the text counts as one).
  const std::string_view before = text.substr(0, std::min(position, text.size()));
  const std::size_t newline = before.rfind('\n');
  const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
  return fmt::format("line {}, column {}: {}", std::count(before.begin(), before.end(), '\n') + 1,
                     position - line_start, what);
}

std::string results_file(const std::string& path) {
  namespace fs = std::filesystem;
  return fs::is_directory(path) ? (fs::path(path) / "results.json").string() : path;
}

// results.json holds per-iteration summaries and one row per request, not
// events: far below this.
constexpr std::size_t kMaxResultsBytes = 256u << 20;

std::string read_results_text(const std::string& file) {
  try {
    return base::read_regular_file(file, base::ReadRules{kMaxResultsBytes, true});
  } catch (const base::FileError& error) {
    throw ResultsError(fmt::format("{}: cannot read results: {}", file, error.reason()));
  }
}

}  // namespace detail

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
  if (r.steps)
    root["per_step"] = {{"steps_per_iteration", r.steps->steps_per_iteration},
                        {"mean_step_s", r.steps->mean_step_s},
                        {"wan_bytes_per_step", r.steps->wan_bytes_per_step}};
  if (r.prefill) root["prefill"] = prefill_json(*r.prefill);
  Json& iterations = root["iterations"] = Json::array();
  for (const IterationSummary& summary : r.iterations) iterations.push_back(iteration_json(summary));
  root["transfers"] = transfers_json(r.transfers);
  if (r.emulation) root["emulation"] = emulation_json(*r.emulation);
  if (r.slowdown) root["slowdown"] = slowdown_json(*r.slowdown);
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
  detail::read_shown_means(fields, r.run);
  r.run.mean_tokens_per_s = fields.number("mean_tokens_per_s");
  r.run.skipped_iterations = fields.whole<int>("means_skip_first_iterations");
  if (fields.has("per_step")) {
    const Fields per_step = fields.object("per_step");
    r.steps = StepFigures{per_step.whole<int>("steps_per_iteration"), per_step.number("mean_step_s"),
                          per_step.number("wan_bytes_per_step")};
  }
  if (fields.has("prefill")) r.prefill = prefill_from(fields.object("prefill"));
  r.iterations = each_object(fields, "iterations", iteration_from);
  r.transfers = transfers_from(fields);
  if (fields.has("emulation")) r.emulation = detail::emulation_from(fields.object("emulation"));
  if (fields.has("slowdown")) r.slowdown = detail::slowdown_from(fields.object("slowdown"));
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

Results read_results(const std::string& path) {
  const std::string file = detail::results_file(path);
  return results_from_json(detail::read_results_text(file), file);
}

ConfigurationView configuration_view(const Results& results, const std::string& label) {
  return detail::view_of(Fields(results.configuration, label + ".configuration"));
}

}  // namespace wanlab::harness
