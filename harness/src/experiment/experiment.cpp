// Experiment files: TOML -> Experiment, with every error pointing at
// file:line:column the way scenario files do.
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/input.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/base/toml.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/model/served_model.hpp"
#include "wanlab/harness/plan/plan.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "experiment/experiment_internal.hpp"
#include "experiment/text.hpp"
#include "experiment/diloco_config.hpp"
#include "experiment/egress_config.hpp"
#include "experiment/fabric_config.hpp"
#include "experiment/prefill_config.hpp"
#include "experiment/toml_fields.hpp"

namespace wanlab::harness {
namespace {

using namespace std::string_view_literals;

constexpr std::array kTopKeys{"name"sv,     "testbed"sv,          "schedule"sv,   "placement"sv,
                              "streams"sv,  "temporal_sharing"sv, "iterations"sv, "seed"sv,
                              "scale"sv,    "reorder_dcs"sv,      "pacing"sv,     "model"sv,
                              "parallel"sv, "compute"sv,          "gpus"sv,       "prefill"sv,
                              "fabric"sv,   "egress"sv,           "wan_start"sv,  "diloco"sv};
constexpr std::array kModelKeys{"layers"sv,          "hidden"sv,     "seq_len"sv,
                                "bytes_per_value"sv, "microbatch"sv, "microbatches"sv};
constexpr std::array kParallelKeys{"pp"sv, "dp"sv, "tp"sv};
constexpr std::array kComputeKeys{"peak_tflops"sv, "mfu"sv, "recompute"sv, "forward_ms"sv, "backward_ms"sv};

constexpr std::size_t kMaxName = 64;
constexpr int kDefaultAtlasStreams = 8;
constexpr double kMaxGpuMemoryGb = 100000;

using base::describe_value;
using detail::apply_schedule_defaults;
using detail::check_cross_fields;
using detail::fail_field;
using detail::FieldReader;
using detail::IntRange;
using detail::kMaxIterations;
using detail::kMaxStreams;
using detail::kMaxWanStartNs;
using detail::kMinScale;
using detail::kPlacementNames;
using detail::kScheduleNames;
using detail::placement_named;
using detail::schedule_named;

bool valid_experiment_name(std::string_view name) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  };
  return !name.empty() && name.size() <= kMaxName && name.front() != '-' && name.front() != '.' &&
         std::all_of(name.begin(), name.end(), allowed);
}

bool given(const Experiment& experiment, const std::string& field) { return experiment.positions.contains(field); }

// Named at pp when the file gives it, else at layers: without [parallel], pp
// is the default 4 and `layers = 2` alone is what is wrong.
void check_stages_fit_layers(const Experiment& experiment) {
  int pp = experiment.parallel.pp;
  int layers = experiment.model.layers;
  if (pp <= layers) return;
  if (given(experiment, "parallel.pp") || !given(experiment, "model.layers")) {
    fail_field(experiment, "parallel.pp",
               fmt::format("{} stages for {} layers; every stage needs at least one layer", pp, layers));
  }
  fail_field(experiment, "model.layers",
             fmt::format("{} layers for the default pp = {} stages; every stage needs at least one layer "
                         "(set [parallel] pp)",
                         layers, pp));
}

void check_worker_count(const Experiment& experiment) {
  std::int64_t workers = static_cast<std::int64_t>(experiment.parallel.pp) * experiment.parallel.dp;
  if (workers <= kMaxSimulatedWorkers) return;
  fail_field(experiment, "parallel", fmt::format("pp x dp = {} workers; at most {}", workers, kMaxSimulatedWorkers));
}

void check_placement_list(const Experiment& experiment) {
  if (experiment.placement != Placement::explicit_list) return;
  std::size_t dcs = experiment.placement_dcs.size();
  if (dcs == static_cast<std::size_t>(experiment.parallel.pp)) return;
  fail_field(experiment, "placement",
             fmt::format("{} DCs for pp = {} stages; list one DC per stage", dcs, experiment.parallel.pp));
}

// Walks one document; every error goes through fail() with a position.
class Parser : FieldReader {
 public:
  explicit Parser(std::string path) : FieldReader(std::move(path)) {}

  Experiment parse(std::string_view text) { return parse(parse_toml(text)); }

  Experiment parse(const toml::table& root) {
    check_known_keys(root, kTopKeys, "the top level");
    read_name(root);
    read_testbed(root);
    read_schedule(root);
    read_scalars(root);
    read_model(root);
    read_parallel(root);
    read_compute(root);
    read_gpus(root);
    read_placement(root);
    detail::read_prefill(*this, root);
    detail::read_fabric(*this, root);
    detail::read_egress(*this, root);
    detail::read_diloco(*this, root);
    apply_schedule_defaults(experiment_);
    check_cross_fields(experiment_);
    return std::move(experiment_);
  }

 private:
  void read_name(const toml::table& root) {
    const toml::node* node = root.get("name");
    if (node == nullptr) fail_at_start(R"(missing required key "name" (e.g. name = "atlas-3dc"))");
    const std::string& name = expect_string(*node, "name", R"(a name like "atlas-3dc")");
    if (!valid_experiment_name(name)) {
      fail(node->source(), fmt::format("name: expected 1 to {} characters from [a-z0-9-_.] starting "
                                       "with a letter or digit (it names the results directory), "
                                       "got {}",
                                       kMaxName, base::quoted(name)));
    }
    remember("name", *node);
    experiment_.name = name;
  }

  void read_testbed(const toml::table& root) {
    const toml::node* node = root.get("testbed");
    if (node == nullptr) {
      fail_at_start(R"(missing required key "testbed" (the scenario file, e.g. testbed = "../three-dc.toml"))");
    }
    const std::string& testbed = expect_file_name(*node, "testbed", R"(a scenario path like "../three-dc.toml")");
    remember("testbed", *node);
    experiment_.testbed_path = detail::resolve_beside(path(), testbed);
  }

  void read_schedule(const toml::table& root) {
    const toml::node* node = root.get("schedule");
    if (node == nullptr) {
      fail_at_start(fmt::format(R"(missing required key "schedule" ({}))", detail::kScheduleChoices));
    }
    const std::string& name = expect_string(*node, "schedule", detail::kScheduleChoices);
    std::optional<Schedule> schedule = schedule_named(name);
    if (!schedule) {
      fail(node->source(), fmt::format(R"(schedule: expected {}, got {}{})", detail::kScheduleChoices,
                                       base::quoted(name), detail::suggestion(name, kScheduleNames)));
    }
    remember("schedule", *node);
    experiment_.schedule = *schedule;
  }

  void read_scalars(const toml::table& root) {
    if (auto streams = read_int(root, "streams", "streams", {1, kMaxStreams})) {
      experiment_.streams = static_cast<int>(*streams);
      experiment_.streams_given = true;
    }
    if (auto pacing = read_bool(root, "pacing", "pacing")) experiment_.pacing = *pacing;
    if (auto sharing = read_bool(root, "temporal_sharing", "temporal_sharing")) {
      experiment_.temporal_sharing = *sharing;
      experiment_.temporal_sharing_given = true;
    }
    experiment_.iterations =
        to_int(read_int(root, "iterations", "iterations", {1, kMaxIterations}), experiment_.iterations);
    if (auto seed = read_int(root, "seed", "seed", {0, std::numeric_limits<std::int64_t>::max()})) {
      experiment_.seed = static_cast<std::uint64_t>(*seed);
    }
    if (auto scale = read_positive(root, "scale", "scale", 1.0, kMinScale)) experiment_.scale = *scale;
    if (auto reorder = read_bool(root, "reorder_dcs", "reorder_dcs")) experiment_.reorder_dcs = *reorder;
    if (auto start = read_time(root, "wan_start", "wan_start", kMaxWanStartNs)) experiment_.wan_start_ns = *start;
  }

  void read_model(const toml::table& root) {
    const toml::table* table = optional_table(root, "model");
    if (table == nullptr) return;
    check_known_keys(*table, kModelKeys, "[model]");
    Model& model = experiment_.model;
    model.layers = to_int(read_int(*table, "layers", "model.layers", {1, 100000}), model.layers);
    model.hidden = to_int(read_int(*table, "hidden", "model.hidden", {1, 1000000}), model.hidden);
    model.seq_len = to_int(read_int(*table, "seq_len", "model.seq_len", {1, 10000000}), model.seq_len);
    model.bytes_per_value =
        to_int(read_int(*table, "bytes_per_value", "model.bytes_per_value", {1, 8}), model.bytes_per_value);
    model.microbatch = to_int(read_int(*table, "microbatch", "model.microbatch", {1, 1000000}), model.microbatch);
    model.microbatches = to_int(read_int(*table, "microbatches", "model.microbatches", {1, 4096}), model.microbatches);
  }

  void read_parallel(const toml::table& root) {
    const toml::table* table = optional_table(root, "parallel");
    if (table == nullptr) return;
    check_known_keys(*table, kParallelKeys, "[parallel]");
    remember("parallel", *table);
    Parallel& parallel = experiment_.parallel;
    parallel.pp = to_int(read_int(*table, "pp", "parallel.pp", {1, kMaxPp}), parallel.pp);
    parallel.dp = to_int(read_int(*table, "dp", "parallel.dp", {1, kMaxDp}), parallel.dp);
    parallel.tp = to_int(read_int(*table, "tp", "parallel.tp", {1, 1024}), parallel.tp);
  }

  void read_compute(const toml::table& root) {
    const toml::table* table = optional_table(root, "compute");
    if (table == nullptr) {
      fail_at_start("missing [compute]: give peak_tflops and mfu, or forward_ms and backward_ms");
    }
    check_known_keys(*table, kComputeKeys, "[compute]");
    Compute& compute = experiment_.compute;
    compute.peak_tflops = read_positive(*table, "peak_tflops", "compute.peak_tflops", 1e6);
    compute.mfu = read_positive(*table, "mfu", "compute.mfu", 1.0);
    compute.forward_ms = read_positive(*table, "forward_ms", "compute.forward_ms", 1e6);
    compute.backward_ms = read_positive(*table, "backward_ms", "compute.backward_ms", 1e6);
    compute.recompute = read_bool(*table, "recompute", "compute.recompute").value_or(false);
    check_compute_is_one_kind(*table);
  }

  // Either FLOPs-derived (peak_tflops + mfu [+ recompute]) or given times.
  void check_compute_is_one_kind(const toml::table& table) const {
    const Compute& compute = experiment_.compute;
    bool flops = compute.peak_tflops || compute.mfu;
    bool given = compute.forward_ms || compute.backward_ms;
    if (flops && given) {
      const toml::node* node = table.get(compute.forward_ms ? "forward_ms" : "backward_ms");
      fail(node->source(),
           "compute: give either peak_tflops and mfu, or forward_ms and backward_ms, "
           "not both");
    }
    auto require_pair = [&](bool has_first, bool has_second, std::string_view first, std::string_view second) {
      if (has_first == has_second) return;
      std::string_view present = has_first ? first : second;
      std::string_view missing = has_first ? second : first;
      fail(table.get(present)->source(), fmt::format("compute.{}: also needs compute.{}", present, missing));
    };
    require_pair(compute.peak_tflops.has_value(), compute.mfu.has_value(), "peak_tflops", "mfu");
    require_pair(compute.forward_ms.has_value(), compute.backward_ms.has_value(), "forward_ms", "backward_ms");
    if (!flops && !given) {
      fail(table.source(), "compute: give peak_tflops and mfu, or forward_ms and backward_ms");
    }
    if (given && compute.recompute) {
      fail(table.get("recompute")->source(),
           "compute.recompute: only used with peak_tflops and mfu; put the recompute time into "
           "backward_ms");
    }
  }

  void read_gpus(const toml::table& root) {
    const toml::table* table = optional_table(root, "gpus");
    if (table == nullptr) return;
    // Not a DC: DC names have no '_' (emulator/names.hpp).
    experiment_.gpu_memory_gb =
        read_positive(*table, "memory_gb", "gpus.memory_gb", kMaxGpuMemoryGb).value_or(experiment_.gpu_memory_gb);
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    for (auto&& [key, node] : *table) {
      if (key.str() != "memory_gb") entries.emplace_back(&key, &node);
    }
    // In file order, as a list of DCs is read by people.
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return comes_before(*a.first, *b.first); });
    for (const auto& [key, node] : entries) {
      std::string field = fmt::format("gpus.{}", key->str());
      const auto* count = node->as_integer();
      if (count == nullptr || count->get() < 0 || count->get() > 1000000) {
        // A quoted key may hold anything ("a\nb" = 1): shown quoted unless it could name a DC.
        std::string shown = emulator::is_valid_dc_name(key->str()) ? field : "gpus." + base::quoted(key->str());
        fail(node->source(),
             fmt::format("{}: expected a number of GPUs from 0 to 1000000, got {}", shown, describe_value(*node)));
      }
      experiment_.positions[field] = where(key->source());
      experiment_.gpus.emplace_back(std::string(key->str()), static_cast<int>(count->get()));
    }
  }

  void read_placement(const toml::table& root) {
    const toml::node* node = root.get("placement");
    if (node == nullptr) return;
    remember("placement", *node);
    experiment_.placement_given = true;
    if (const toml::array* list = node->as_array()) {
      read_placement_list(*list);
      return;
    }
    const std::string& name =
        expect_string(*node, "placement", R"("atlas", "pp-across-dc", "dp-across-dc" or a list of DCs, one per stage)");
    std::optional<Placement> placement = placement_named(name);
    if (!placement) {
      fail(node->source(), fmt::format(R"(placement: expected "atlas", "pp-across-dc", "dp-across-dc" or a list of )"
                                       R"(DCs, one per stage, got {}{})",
                                       base::quoted(name), detail::suggestion(name, kPlacementNames)));
    }
    experiment_.placement = *placement;
  }

  // Its length against pp is a cross-field check (check_placement_list).
  void read_placement_list(const toml::array& list) {
    experiment_.placement = Placement::explicit_list;
    for (std::size_t stage = 0; stage < list.size(); ++stage) {
      std::string field = fmt::format("placement[{}]", stage);
      const std::string& dc = expect_string(list[stage], field, R"(a DC name like "east")");
      if (dc.empty()) fail(list[stage].source(), fmt::format("{}: empty DC name", field));
      remember(field, list[stage]);
      experiment_.placement_dcs.push_back(dc);
    }
  }
};

}  // namespace

namespace detail {

std::optional<Schedule> schedule_named(std::string_view name) {
  if (name == "gpipe") return Schedule::gpipe;
  if (name == "1f1b") return Schedule::one_f_one_b;
  if (name == "atlas") return Schedule::atlas;
  if (name == "diloco") return Schedule::diloco;
  if (name == "streaming-diloco") return Schedule::streaming_diloco;
  return std::nullopt;
}

std::optional<Placement> placement_named(std::string_view name) {
  if (name == "atlas") return Placement::atlas;
  if (name == "pp-across-dc") return Placement::pp_across_dc;
  if (name == "dp-across-dc") return Placement::dp_across_dc;
  return std::nullopt;
}

void apply_schedule_defaults(Experiment& experiment) {
  const bool atlas = experiment.schedule == Schedule::atlas;
  const bool diloco = is_diloco(experiment.schedule);
  if (!experiment.placement_given) {
    experiment.placement = atlas ? Placement::atlas : diloco ? Placement::dp_across_dc : Placement::pp_across_dc;
    experiment.placement_dcs.clear();
  }
  // DiLoCo's outer sync goes over the multi-stream transport as Atlas's WAN
  // hops do; it has no cross-DC point to point for temporal sharing to order.
  if (!experiment.streams_given) experiment.streams = atlas || diloco ? kDefaultAtlasStreams : 1;
  if (!experiment.temporal_sharing_given) experiment.temporal_sharing = atlas;
  apply_diloco_defaults(experiment);
}

void check_cross_fields(const Experiment& experiment) {
  check_stages_fit_layers(experiment);
  check_worker_count(experiment);
  check_placement_list(experiment);
  check_plan_size(experiment, experiment.iterations);
  detail::check_prefill(experiment);
  check_diloco(experiment);
  check_memory(experiment);
}

}  // namespace detail

int steps_per_iteration(const Experiment& experiment) {
  return is_diloco(experiment.schedule) ? experiment.diloco.inner_steps : 1;
}

std::string Experiment::where(const std::string& field) const {
  auto found = positions.find(field);
  return found != positions.end() ? found->second : path;
}

Experiment parse_experiment(std::string_view toml_text, const std::string& path) {
  return Parser(path).parse(toml_text);
}

Experiment detail::parse_experiment_table(const toml::table& root, const std::string& path) {
  return Parser(path).parse(root);
}

Experiment load_experiment(const std::string& path) {
  return parse_experiment(emulator::read_input_file<ExperimentError>(path, "experiment"), path);
}

emulator::Scenario load_testbed(const Experiment& experiment) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(experiment.testbed_path, error)) {
    throw ExperimentError(fmt::format("{}: testbed: no scenario file at {}", experiment.where("testbed"),
                                      base::quoted(experiment.testbed_path, 256)));
  }
  return emulator::load_scenario(experiment.testbed_path);
}

std::string to_string(Schedule schedule) {
  switch (schedule) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::atlas: return "atlas";
    case Schedule::diloco: return "diloco";
    case Schedule::streaming_diloco: return "streaming-diloco";
  }
  return "?";
}

std::string to_string(Placement placement) {
  switch (placement) {
    case Placement::atlas: return "atlas";
    case Placement::pp_across_dc: return "pp-across-dc";
    case Placement::dp_across_dc: return "dp-across-dc";
    case Placement::explicit_list: return "list";
  }
  return "?";
}

}  // namespace wanlab::harness
