// results.json's contents made from a run's record: the summaries, and the
// experiment, plan and versions echoed (the codec is results_json.cpp).
#include <fmt/format.h>
#include <toml++/toml.h>

#include "report/build_info.hpp"
#include "record/record_internal.hpp"
#include "wanlab/harness/record/results.hpp"
#include "wanlab/harness/experiment/prefill.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"

namespace wanlab::harness {
namespace {

using Json = nlohmann::ordered_json;

Json prefill_configuration_json(const PrefillConfig& prefill) {
  Json json = Json::object();
  json["enabled"] = prefill.enabled;
  if (!prefill.enabled) return json;
  if (!prefill.requests_path.empty()) json["requests"] = prefill.requests_path;
  if (prefill.arrivals) {
    json["arrivals"] = {{"rate_per_s", prefill.arrivals->rate_per_s},
                        {"prompt_median", prefill.arrivals->prompt_median},
                        {"prompt_p90", prefill.arrivals->prompt_p90},
                        {"seed", prefill.arrivals->seed}};
  }
  json["decode_dc"] = prefill.decode_dc;
  json["ttft_slo_s"] = static_cast<double>(prefill.ttft_slo_ns) / 1e9;
  json["max_batch_tokens"] = prefill.max_batch_tokens;
  json["guard_ms"] = static_cast<double>(prefill.guard_ns) / 1e6;
  Json& model = json["model"] = {{"layers", prefill.model.layers},
                                 {"hidden", prefill.model.hidden},
                                 {"kv_heads", prefill.model.kv_heads},
                                 {"head_dim", prefill.model.head_dim},
                                 {"bytes_per_value", prefill.model.bytes_per_value}};
  if (prefill.model.parameters > 0) model["parameters"] = prefill.model.parameters;
  if (!prefill.time_tokens.empty()) json["time"] = {{"tokens", prefill.time_tokens}, {"ms", prefill.time_ms}};
  return json;
}

Json compute_json(const Compute& compute) {
  Json json = Json::object();
  if (compute.peak_tflops) json["peak_tflops"] = *compute.peak_tflops;
  if (compute.mfu) json["mfu"] = *compute.mfu;
  json["recompute"] = compute.recompute;
  if (compute.forward_ms) json["forward_ms"] = *compute.forward_ms;
  if (compute.backward_ms) json["backward_ms"] = *compute.backward_ms;
  return json;
}

Json configuration_json(const Experiment& experiment) {
  Json config = Json::object();
  config["name"] = experiment.name;
  config["path"] = experiment.path;
  config["testbed"] = experiment.testbed_path;
  config["schedule"] = to_string(experiment.schedule);
  config["placement"] = experiment.placement == Placement::explicit_list ? Json(experiment.placement_dcs)
                                                                         : Json(to_string(experiment.placement));
  config["reorder_dcs"] = experiment.reorder_dcs;
  config["streams"] = experiment.streams;
  config["temporal_sharing"] = experiment.temporal_sharing;
  config["pacing"] = experiment.pacing;
  config["iterations"] = experiment.iterations;
  config["seed"] = experiment.seed;
  config["scale"] = experiment.scale;
  config["model"] = {{"layers", experiment.model.layers},         {"hidden", experiment.model.hidden},
                     {"seq_len", experiment.model.seq_len},       {"bytes_per_value", experiment.model.bytes_per_value},
                     {"microbatch", experiment.model.microbatch}, {"microbatches", experiment.model.microbatches}};
  config["parallel"] = {{"pp", experiment.parallel.pp}, {"dp", experiment.parallel.dp}, {"tp", experiment.parallel.tp}};
  config["compute"] = compute_json(experiment.compute);
  Json& gpus = config["gpus"] = Json::object();
  for (const auto& [dc, count] : experiment.gpus) gpus[dc] = count;
  config["gpu_memory_gb"] = experiment.gpu_memory_gb;
  config["prefill"] = prefill_configuration_json(experiment.prefill);
  if (is_diloco(experiment.schedule)) {
    const Diloco& diloco = experiment.diloco;
    config["diloco"] = {{"inner_steps", diloco.inner_steps},
                        {"fragments", diloco.fragments},
                        {"outer_bits", diloco.outer_bits},
                        {"overlap_steps", diloco.overlap_steps}};
  }
  return config;
}

Json plan_json(const Plan& plan) {
  Json json = Json::object();
  json["parameters"] = plan.parameters;
  json["activation_bytes"] = plan.activation_bytes;
  json["stage_param_bytes"] = plan.stage_param_bytes;
  json["allreduce_bytes_per_worker"] = plan.allreduce_bytes;
  if (is_diloco(plan.experiment.schedule)) json["fragment_bytes"] = plan.fragment_bytes;
  json["forward_ms"] = static_cast<double>(plan.forward_ns) / 1e6;
  json["backward_ms"] = static_cast<double>(plan.backward_ns) / 1e6;
  json["gpus_used"] = plan.gpus_used;
  Json& stage_dc = json["stage_dc"] = Json::array();
  for (int dc : plan.stage_dc) stage_dc.push_back(plan.dc_names.at(static_cast<std::size_t>(dc)));
  Json& workers = json["workers"] = Json::array();
  for (const WorkerPlan& worker_plan : plan.workers) {
    const Worker& worker = worker_plan.worker;
    workers.push_back({{"id", worker.id},
                       {"stage", worker.stage},
                       {"replica", worker.replica},
                       {"dc", worker.dc_name},
                       {"host", worker.host},
                       {"ops", worker_plan.ops.size()}});
  }
  return json;
}

std::vector<std::pair<std::string, std::string>> versions() {
  const detail::BuildInfo& build = detail::build_info();
  std::vector<std::pair<std::string, std::string>> out{{"wanlab", build.wanlab}};
  if (!build.git_commit.empty()) out.emplace_back("git_commit", build.git_commit);
  out.insert(out.end(), {{"tomlplusplus", build.tomlplusplus},
                         {"fmt", build.fmt},
                         {"nlohmann_json", build.nlohmann_json},
                         {"compiler", build.compiler}});
  return out;
}

PrefillResults prefill_results(const RunRecord& record) {
  PrefillResults prefill;
  prefill.summary = summarize_prefill(record);
  prefill.notes = record.prefill->notes;
  for (const RequestOutcome& outcome : record.prefill->requests) {
    RequestRow row{outcome.id,
                   static_cast<double>(outcome.arrival_ns) / 1e9,
                   outcome.prompt_tokens,
                   to_string(outcome.state),
                   std::nullopt,
                   outcome.reason};
    if (outcome.state == RequestState::served)
      row.ttft_s = static_cast<double>(outcome.first_token_ns - outcome.arrival_ns) / 1e9;
    prefill.requests.push_back(std::move(row));
  }
  return prefill;
}

}  // namespace

Results make_results(const RunRecord& record, const std::string& scenario_text) {
  const Experiment& experiment = record.plan.experiment;
  Results results;
  results.experiment = experiment.name;
  results.runtime = record.runtime;
  results.runtime_detail = record.runtime_detail;
  results.iterations = summarize(record);
  results.run = summarize_run(results.iterations);
  if (is_diloco(experiment.schedule)) results.steps = step_figures(experiment, results.iterations, results.run);
  if (record.prefill) results.prefill = prefill_results(record);
  results.transfers = summarize_transfers(record);
  if (record.emulation) results.emulation = judge_emulation(*record.emulation);
  results.slowdown = record.slowdown;
  results.configuration = configuration_json(experiment);
  results.plan = plan_json(record.plan);
  results.seed = experiment.seed;
  results.versions = versions();
  results.scenario_path = experiment.testbed_path;
  results.scenario_text = scenario_text;
  return results;
}

std::string results_json(const RunRecord& record, const std::string& scenario_text) {
  return results_text(make_results(record, scenario_text));
}

void write_results_json(const RunRecord& record, const std::string& scenario_text, const base::OutputDir& dir) {
  dir.write("results.json", results_json(record, scenario_text));
}

}  // namespace wanlab::harness
