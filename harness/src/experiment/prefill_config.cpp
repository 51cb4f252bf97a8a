// [prefill]: BubbleTea's section of an experiment file, read as strictly as
// the rest ("file:line:column: prefill.field: ..."), and its checks against
// the rest of the experiment.
#include "experiment/prefill_config.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "wanlab/harness/model/served_model.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/base/toml.hpp"
#include "wanlab/emulator/units.hpp"
#include "wanlab/harness/experiment/prefill.hpp"

namespace wanlab::harness::detail {
namespace {

using namespace std::string_view_literals;
using base::describe_value;

constexpr std::array kPrefillKeys{"enabled"sv, "requests"sv,         "arrivals"sv,        "decode_dc"sv, "ttft_slo"sv,
                                  "guard"sv,   "max_batch_tokens"sv, "intra_host_rate"sv, "model"sv,     "time"sv};
constexpr std::array kArrivalKeys{"rate"sv, "prompt_median"sv, "prompt_p90"sv, "seed"sv};
constexpr std::array kServedModelKeys{"layers"sv,   "hidden"sv,          "kv_heads"sv,
                                      "head_dim"sv, "bytes_per_value"sv, "parameters"sv};
constexpr std::array kTimeKeys{"tokens"sv, "ms"sv};

constexpr int kMaxTokens = PrefillConfig::kMaxTokens;
constexpr double kMaxRatePerS = 10'000;                 // requests per second
constexpr std::uint64_t kMaxSloNs = 3'600'000'000'000;  // an hour
constexpr std::uint64_t kMaxGuardNs = 60'000'000'000;   // a minute
constexpr double kMaxPrefillMs = 1e6;                   // per table point: about 17 minutes
constexpr double kMaxServedParameters = 1e14;           // 100 T
constexpr std::size_t kMaxTimePoints = 1000;

// "4/s", "240/min", "0.5/h" -> requests per second.
double parse_rate_per_s(std::string_view text) {
  constexpr std::array<std::pair<std::string_view, double>, 3> kUnits{{{"/s", 1.0}, {"/min", 60.0}, {"/h", 3600.0}}};
  for (const auto& [unit, seconds] : kUnits) {
    if (!text.ends_with(unit)) continue;
    try {
      double per_s =
          base::parse_decimal(text.substr(0, text.size() - unit.size()), 0, kMaxRatePerS * seconds) / seconds;
      if (per_s > 0) return per_s;
    } catch (const base::ParseError&) {
      // Answered below, with the units.
    }
    break;
  }
  throw base::ParseError(fmt::format(R"(expected a rate greater than 0 and at most {:g}/s like "4/s" or )"
                                     R"("240/min", got {})",
                                     kMaxRatePerS, base::quoted(text)));
}

class PrefillReader {
 public:
  PrefillReader(FieldReader& reader, const toml::table& section)
      : reader_(reader), section_(section), config_(reader.experiment().prefill) {}

  void read() {
    reader_.check_known_keys(section_, kPrefillKeys, "[prefill]");
    reader_.remember("prefill", section_);
    config_.enabled = reader_.read_bool(section_, "enabled", "prefill.enabled").value_or(true);
    read_requests();
    read_arrivals();
    read_decode_dc();
    read_times();
    config_.max_batch_tokens =
        FieldReader::to_int(reader_.read_int(section_, "max_batch_tokens", "prefill.max_batch_tokens", {1, kMaxTokens}),
                            config_.max_batch_tokens);
    config_.intra_host_bps =
        reader_.read_rate(section_, "intra_host_rate", "prefill.intra_host_rate").value_or(config_.intra_host_bps);
    read_model();
    read_time_table();
  }

 private:
  void read_requests() {
    const toml::node* node = section_.get("requests");
    if (node == nullptr) return;
    const std::string& path =
        reader_.expect_file_name(*node, "prefill.requests", R"(a trace file like "../traces/code-sample.csv")");
    reader_.remember("prefill.requests", *node);
    config_.requests_path = resolve_beside(reader_.experiment().path, path);
  }

  void read_arrivals() {
    const toml::node* node = section_.get("arrivals");
    if (node == nullptr) return;
    if (section_.contains("requests")) {
      reader_.fail(node->source(),
                   "prefill.arrivals: give requests (a trace file) or arrivals (a Poisson process), "
                   "not both");
    }
    const toml::table* table = node->as_table();
    if (table == nullptr) {
      reader_.fail(node->source(), fmt::format(R"(prefill.arrivals: expected a table like {{ rate = "4/s", )"
                                               R"(prompt_median = 1469, prompt_p90 = 5194 }}, got {})",
                                               describe_value(*node)));
    }
    reader_.check_known_keys(*table, kArrivalKeys, "prefill.arrivals");
    reader_.remember("prefill.arrivals", *table);
    config_.arrivals = read_arrival_process(*table);
  }

  ArrivalProcess read_arrival_process(const toml::table& table) {
    ArrivalProcess process;
    const toml::node& rate = required(table, "rate", R"(rate = "4/s")");
    process.rate_per_s = reader_.parse_string(rate, "prefill.arrivals.rate", R"(a rate like "4/s")", parse_rate_per_s);
    reader_.remember("prefill.arrivals.rate", rate);
    required(table, "prompt_median", "prompt_median = 1469");
    required(table, "prompt_p90", "prompt_p90 = 5194");
    process.prompt_median =
        *reader_.read_positive(table, "prompt_median", "prefill.arrivals.prompt_median", kMaxTokens, 1);
    process.prompt_p90 = *reader_.read_positive(table, "prompt_p90", "prefill.arrivals.prompt_p90", kMaxTokens, 1);
    if (process.prompt_p90 < process.prompt_median) {
      reader_.fail(table.get("prompt_p90")->source(),
                   fmt::format("prefill.arrivals.prompt_p90: {:g} is below prompt_median {:g}; the 90th percentile "
                               "is at least the median",
                               process.prompt_p90, process.prompt_median));
    }
    if (auto seed =
            reader_.read_int(table, "seed", "prefill.arrivals.seed", {0, std::numeric_limits<std::int64_t>::max()})) {
      process.seed = static_cast<std::uint64_t>(*seed);
    }
    return process;
  }

  const toml::node& required(const toml::table& table, std::string_view key, std::string_view example) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      reader_.fail(table.source(), fmt::format("prefill.arrivals: missing {} (e.g. {})", key, example));
    }
    return *node;
  }

  void read_decode_dc() {
    const toml::node* node = section_.get("decode_dc");
    if (node == nullptr) return;
    const std::string& dc = reader_.expect_string(*node, "prefill.decode_dc", R"(a DC name like "europe", or "local")");
    if (dc.empty()) reader_.fail(node->source(), "prefill.decode_dc: empty DC name");
    reader_.remember("prefill.decode_dc", *node);
    config_.decode_dc = dc;
  }

  void read_times() {
    if (const toml::node* node = section_.get("ttft_slo")) {
      config_.ttft_slo_ns = read_time(*node, "prefill.ttft_slo", R"(a time like "3s")", 1, kMaxSloNs);
    }
    if (const toml::node* node = section_.get("guard")) {
      config_.guard_ns = read_time(*node, "prefill.guard", R"(a time like "5ms")", 0, kMaxGuardNs);
    }
  }

  // The emulator's time strings ("3s", "5ms"), as scenario files write them.
  std::uint64_t read_time(const toml::node& node, const std::string& field, std::string_view expected,
                          std::uint64_t min_ns, std::uint64_t max_ns) {
    std::uint64_t ns = reader_.parse_string(node, field, expected, emulator::units::parse_time);
    if (ns < min_ns || ns > max_ns) {
      reader_.fail(node.source(), fmt::format("{}: expected {} from {} to {}, got {}", field, expected,
                                              emulator::units::format_time(min_ns),
                                              emulator::units::format_time(max_ns), describe_value(node)));
    }
    reader_.remember(field, node);
    return ns;
  }

  void read_model() {
    const toml::table* table = reader_.optional_table(section_, "model");
    if (table == nullptr) return;
    reader_.check_known_keys(*table, kServedModelKeys, "[prefill.model]");
    ServedModel& model = config_.model;
    auto read = [&](std::string_view key, int fallback, IntRange range) {
      return FieldReader::to_int(reader_.read_int(*table, key, fmt::format("prefill.model.{}", key), range), fallback);
    };
    model.layers = read("layers", model.layers, {1, 10000});
    model.hidden = read("hidden", model.hidden, {1, 1000000});
    model.kv_heads = read("kv_heads", model.kv_heads, {1, 4096});
    model.head_dim = read("head_dim", model.head_dim, {1, 65536});
    model.bytes_per_value = read("bytes_per_value", model.bytes_per_value, {1, 8});
    model.parameters = reader_.read_positive(*table, "parameters", "prefill.model.parameters", kMaxServedParameters)
                           .value_or(model.parameters);
  }

  void read_time_table() {
    const toml::table* table = reader_.optional_table(section_, "time");
    if (table == nullptr) return;
    reader_.check_known_keys(*table, kTimeKeys, "[prefill.time]");
    reader_.remember("prefill.time", *table);
    const toml::array& tokens = array(*table, "tokens");
    const toml::array& ms = array(*table, "ms");
    if (tokens.size() != ms.size()) {
      reader_.fail(ms.source(), fmt::format("prefill.time.ms: {} times for {} token counts; give one time per "
                                            "token count",
                                            ms.size(), tokens.size()));
    }
    config_.time_tokens = increasing(tokens, "prefill.time.tokens", 1, kMaxTokens, true);
    // More tokens never take less time: extrapolation stays non-negative.
    config_.time_ms = increasing(ms, "prefill.time.ms", 0, kMaxPrefillMs, false);
  }

  const toml::array& array(const toml::table& table, std::string_view key) const {
    std::string field = fmt::format("prefill.time.{}", key);
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      reader_.fail(table.source(),
                   fmt::format("prefill.time: missing {} (e.g. tokens = [128, 1024] and ms = [48, 158])", key));
    }
    const toml::array* list = node->as_array();
    if (list == nullptr || list->size() < 2 || list->size() > kMaxTimePoints) {
      reader_.fail(node->source(), fmt::format("{}: expected a list of 2 to {} numbers, got {}", field, kMaxTimePoints,
                                               list ? fmt::format("{} of them", list->size()) : describe_value(*node)));
    }
    return *list;
  }

  // Token counts in [min, max], each above the one before (`strictly`), or
  // times in (min, max], each at least the one before.
  std::vector<double> increasing(const toml::array& list, std::string_view field, double min, double max,
                                 bool strictly) const {
    std::string expected = strictly ? fmt::format("a number of tokens from {:.0f} to {:.0f}", min, max)
                                    : fmt::format("a time in ms greater than {:.0f} and at most {:.0f}", min, max);
    std::vector<double> values;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const toml::node& node = list[i];
      std::optional<double> value = node.value<double>();
      if (!value || !(strictly ? *value >= min : *value > min) || *value > max) {
        reader_.fail(node.source(),
                     fmt::format("{}[{}]: expected {}, got {}", field, i, expected, describe_value(node)));
      }
      if (!values.empty() && (strictly ? *value <= values.back() : *value < values.back())) {
        reader_.fail(node.source(), fmt::format("{}[{}]: {:g} after {:g}; the list must {}", field, i, *value,
                                                values.back(), strictly ? "increase" : "not decrease"));
      }
      values.push_back(*value);
    }
    return values;
  }

  FieldReader& reader_;
  const toml::table& section_;
  PrefillConfig& config_;
};

[[noreturn]] void fail_prefill(const Experiment& experiment, std::string_view field, std::string_view message) {
  throw ExperimentError(fmt::format("{}: {}: {}", prefill_where(experiment), field, message));
}

void check_sources(const Experiment& experiment) {
  const PrefillConfig& prefill = experiment.prefill;
  if (prefill.requests_path.empty() && !prefill.arrivals) {
    fail_prefill(experiment, "prefill",
                 R"(give requests (a trace file, e.g. requests = "../traces/code-sample.csv") or arrivals )"
                 R"((a Poisson process, e.g. arrivals = { rate = "4/s", prompt_median = 1469, prompt_p90 = 5194 }))");
  }
  if (prefill.decode_dc.empty()) {
    fail_prefill(experiment, "prefill",
                 R"(missing decode_dc, the DC whose host receives the KV caches (e.g. )"
                 R"(decode_dc = "europe"))");
  }
}

void check_prefill_time(const Experiment& experiment) {
  if (!experiment.prefill.time_tokens.empty() || experiment.compute.peak_tflops) return;
  fail_prefill(experiment, "prefill.time",
               "missing: [compute] gives forward_ms and backward_ms, so the prefill time cannot be derived from "
               "peak_tflops and mfu; give [prefill.time] tokens = [...] and ms = [...]");
}

}  // namespace

std::string prefill_where(const Experiment& experiment) {
  std::string where = experiment.where("prefill.enabled");
  return where.starts_with("--") ? where : experiment.where("prefill");
}

void read_prefill(FieldReader& reader, const toml::table& root) {
  const toml::table* section = reader.optional_table(root, "prefill");
  if (section == nullptr) return;
  PrefillReader(reader, *section).read();
}

void check_prefill(const Experiment& experiment) {
  if (!experiment.prefill.enabled) return;
  check_sources(experiment);
  check_prefill_time(experiment);
}

void override_prefill(Experiment& experiment, const std::string& flag, bool on) {
  if (on && !experiment.positions.contains("prefill")) {
    throw ExperimentError(
        fmt::format("{}: on needs a [prefill] section in {} (requests or arrivals, decode_dc)", flag, experiment.path));
  }
  experiment.prefill.enabled = on;
  experiment.positions["prefill.enabled"] = flag;
}

}  // namespace wanlab::harness::detail
