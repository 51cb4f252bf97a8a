// card.yaml (card.hpp): a small YAML writer and the card's fields.
#include "wanlab/harness/report/card.hpp"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <cmath>
#include <map>

#include "report/build_info.hpp"
#include "record/record_internal.hpp"

namespace wanlab::harness {
namespace {

constexpr int kCardVersion = 1;

// A double-quoted YAML scalar: YAML's double-quoted style takes JSON's escapes.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\', out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\u{:04x}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A float both YAML 1.2 and 1.1 readers (PyYAML) take as a number: whole
// values without a fraction, an exponent only after a '.', .inf and .nan.
std::string yaml_number(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  if (value == std::floor(value) && std::abs(value) < 1e15) return fmt::format("{:.0f}", value);
  std::string text = fmt::format("{}", value);
  const auto exponent = text.find('e');
  if (exponent != std::string::npos && text.find('.') == std::string::npos) text.insert(exponent, ".0");
  return text;
}

// Block mappings, and sequences of flat mappings, two spaces a level.
class Yaml {
 public:
  void comment(std::string_view text) { out_ += fmt::format("{}# {}\n", spaces(indent_), text); }
  void text(std::string_view key, std::string_view value) { line(key, quoted(value)); }
  void number(std::string_view key, double value) { line(key, yaml_number(value)); }
  void integer(std::string_view key, long long value) { line(key, std::to_string(value)); }
  void boolean(std::string_view key, bool value) { line(key, value ? "true" : "false"); }
  void null(std::string_view key) { line(key, "null"); }
  void texts(std::string_view key, const std::vector<std::string>& values) {
    std::string list;
    for (const auto& value : values) list += (list.empty() ? "" : ", ") + quoted(value);
    line(key, "[" + list + "]");
  }
  // A mapping (or, with item(), a sequence of mappings) under `key`, until close().
  void open(std::string_view key) {
    line(key, "");
    indent_ += 2;
  }
  void close() {
    indent_ -= 2;
    in_item_ = false;
  }
  // The next key starts a new mapping in the sequence open here: "- key: value".
  void item() { dash_ = true; }
  const std::string& str() const { return out_; }

 private:
  static std::string spaces(int n) { return std::string(static_cast<std::size_t>(n), ' '); }

  void line(std::string_view key, std::string_view value) {
    const std::string prefix = dash_ ? spaces(indent_) + "- " : spaces(indent_ + (in_item_ ? 2 : 0));
    in_item_ = in_item_ || dash_;
    dash_ = false;
    out_ += fmt::format("{}{}:{}{}\n", prefix, key, value.empty() ? "" : " ", value);
  }

  std::string out_;
  int indent_ = 0;
  bool dash_ = false;
  bool in_item_ = false;  // keys of a sequence's mapping: under its "- "
};

std::string kernel() {
  struct utsname name {};
  if (::uname(&name) != 0) return "unknown";
  return fmt::format("{} {} {}", name.sysname, name.release, name.machine);
}

void write_run(Yaml& y, const RunRecord& record, const Invocation& invocation) {
  const Experiment& e = record.plan.experiment;
  y.open("run");
  y.text("kind", record.runtime == kSimulatorRuntime ? "simulated" : "emulated");
  y.text("runtime", record.runtime);
  y.integer("iterations", detail::iteration_count(record));
  y.integer("seed", static_cast<long long>(e.seed));
  y.text("command", invocation.command);
  y.text("working_directory", invocation.working_directory);
  if (!invocation.sweep_point.empty()) y.text("sweep_point", invocation.sweep_point);
  y.text("experiment_file", e.path);
  y.text("testbed_file", e.testbed_path);
  y.close();
}

void write_model(Yaml& y, const Plan& plan) {
  const Model& m = plan.experiment.model;
  y.open("model");
  y.integer("layers", m.layers);
  y.integer("hidden", m.hidden);
  y.integer("seq_len", m.seq_len);
  y.integer("bytes_per_value", m.bytes_per_value);
  y.integer("microbatch", m.microbatch);
  y.integer("microbatches", m.microbatches);
  y.number("parameters", plan.parameters);
  y.close();
}

void write_parallelism(Yaml& y, const Plan& plan) {
  const Experiment& e = plan.experiment;
  y.open("parallelism");
  y.integer("pp", e.parallel.pp);
  y.integer("dp", e.parallel.dp);
  y.integer("tp", e.parallel.tp);
  y.integer("gpus", plan.gpus_used);
  y.close();
  y.open("schedule");
  y.text("name", to_string(e.schedule));
  y.text("placement", to_string(e.placement));
  std::vector<std::string> stage_dcs;
  for (const int dc : plan.stage_dc) stage_dcs.push_back(plan.dc_names.at(static_cast<std::size_t>(dc)));
  y.texts("stage_dcs", stage_dcs);
  y.integer("streams", e.streams);
  y.boolean("temporal_sharing", e.temporal_sharing);
  y.boolean("reorder_dcs", e.reorder_dcs);
  y.boolean("pacing", e.pacing);
  y.number("scale", e.scale);
  y.close();
}

void write_compute(Yaml& y, const Plan& plan) {
  const Experiment& e = plan.experiment;
  y.open("compute");
  if (e.compute.peak_tflops) y.number("peak_tflops", *e.compute.peak_tflops);
  if (e.compute.mfu) y.number("mfu", *e.compute.mfu);
  y.boolean("recompute", e.compute.recompute);
  y.number("forward_ms", static_cast<double>(plan.forward_ns) / 1e6);
  y.number("backward_ms", static_cast<double>(plan.backward_ns) / 1e6);
  y.number("gpu_memory_gb", e.gpu_memory_gb);
  y.close();
  y.open("prefill");
  y.boolean("enabled", e.prefill.enabled);
  if (e.prefill.enabled) y.text("decode_dc", e.prefill.decode_dc);
  y.close();
}

// The link of one directed pair, as the scenario decides it.
void write_link(Yaml& y, const emulator::PairParams& pair) {
  y.number("delay_ms", static_cast<double>(pair.delay_ns) / 1e6);
  y.number("jitter_ms", static_cast<double>(pair.jitter_ns) / 1e6);
  y.integer("rate_bps", static_cast<long long>(pair.rate_bps));
  y.integer("flow_rate_bps", static_cast<long long>(pair.flow_rate_bps));
  y.number("loss", pair.loss);
}

void write_testbed(Yaml& y, const Experiment& experiment, const emulator::Scenario& scenario) {
  std::map<std::string, int> gpus(experiment.gpus.begin(), experiment.gpus.end());
  y.open("testbed");
  y.text("name", scenario.name);
  y.comment("rates at full size; the emulated run multiplies them by schedule.scale");
  y.open("dcs");
  for (const emulator::Dc& dc : scenario.dcs) {
    y.item();
    y.text("name", dc.name);
    y.integer("hosts", dc.hosts);
    if (gpus.contains(dc.name)) y.integer("gpus", gpus[dc.name]);
  }
  y.close();
  y.open("wan");
  for (std::size_t src = 0; src < scenario.dcs.size(); ++src) {
    for (std::size_t dst = 0; dst < scenario.dcs.size(); ++dst) {
      y.item();
      y.text("src", scenario.dcs[src].name);
      y.text("dst", scenario.dcs[dst].name);
      write_link(y, scenario.pair(static_cast<int>(src), static_cast<int>(dst)));
    }
  }
  y.close();
  y.close();
}

void write_software(Yaml& y, const RunRecord& record) {
  const detail::BuildInfo& build = detail::build_info();
  y.open("software");
  y.text("wanlab", build.wanlab);
  if (build.git_commit.empty()) {
    y.null("git_commit");
  } else {
    y.text("git_commit", build.git_commit);
  }
  y.text("compiler", build.compiler);
  y.text("kernel", kernel());
  y.text("tomlplusplus", build.tomlplusplus);
  y.text("fmt", build.fmt);
  y.text("nlohmann_json", build.nlohmann_json);
  y.text("container_runtime",
         record.runtime_detail.empty() ? record.runtime : record.runtime + " " + record.runtime_detail);
  y.close();
}

}  // namespace

std::string workload_card(const RunRecord& record, const emulator::Scenario& scenario, const Invocation& invocation) {
  Yaml y;
  y.comment("wanlab workload card: what ran, on what, built from what, and the command that runs it again");
  y.integer("card_version", kCardVersion);
  y.text("name", record.plan.experiment.name);
  write_run(y, record, invocation);
  write_model(y, record.plan);
  write_parallelism(y, record.plan);
  write_compute(y, record.plan);
  write_testbed(y, record.plan.experiment, scenario);
  write_software(y, record);
  return y.str();
}

void write_workload_card(const RunRecord& record, const emulator::Scenario& scenario, const Invocation& invocation,
                         const base::OutputDir& dir) {
  dir.write("card.yaml", workload_card(record, scenario, invocation));
}

}  // namespace wanlab::harness
