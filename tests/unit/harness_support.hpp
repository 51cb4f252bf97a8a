// Shared by the harness unit tests: reports read back through nlohmann (to check
// that they parse and hold what they claim) and small scenario/experiment builders.
#pragma once

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wanlab/base/one_line.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace harness_test {

struct JsonValue {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  bool has(std::string_view key) const {
    for (const auto& member : members) {
      if (member.first == key) return true;
    }
    return false;
  }
  const JsonValue& operator[](std::string_view key) const {
    for (const auto& member : members) {
      if (member.first == key) return member.second;
    }
    throw std::runtime_error("JSON: no member \"" + std::string(key) + "\"");
  }
  const JsonValue& operator[](std::size_t index) const { return items.at(index); }
};

// nlohmann's value as the tests read it (parsing is strict: RFC 8259, nothing after the value).
inline JsonValue from_nlohmann(const nlohmann::ordered_json& json) {
  JsonValue value;
  if (json.is_boolean()) {
    value.type = JsonValue::Type::boolean;
    value.boolean = json.get<bool>();
  } else if (json.is_number()) {
    value.type = JsonValue::Type::number;
    value.number = json.get<double>();
  } else if (json.is_string()) {
    value.type = JsonValue::Type::string;
    value.text = json.get<std::string>();
  } else if (json.is_array()) {
    value.type = JsonValue::Type::array;
    for (const auto& item : json) value.items.push_back(from_nlohmann(item));
  } else if (json.is_object()) {
    value.type = JsonValue::Type::object;
    for (const auto& item : json.items()) value.members.emplace_back(item.key(), from_nlohmann(item.value()));
  }
  return value;
}

inline JsonValue parse_json(std::string_view text) { return from_nlohmann(nlohmann::ordered_json::parse(text)); }

// Three DCs with cited-like delays: a-b 10 ms, a-c 40 ms, b-c 60 ms one way,
// 1 Gbit/s between DCs, 10 Gbit/s and 50 us inside, two hosts each.
inline const char* const kThreeDcScenario = R"(name = "t3"
[defaults]
rate = "1gbit"
[intra_dc]
delay = "50us"
rate = "10gbit"
[[dc]]
name = "a"
hosts = 2
[[dc]]
name = "b"
hosts = 2
[[dc]]
name = "c"
hosts = 2
[[link]]
between = ["a", "b"]
delay = "10ms"
[[link]]
between = ["a", "c"]
delay = "40ms"
[[link]]
between = ["b", "c"]
delay = "60ms"
)";

// The testbed's link model without TCP's dynamics or frame overhead: every
// transfer at the link's steady rate from its first byte, so iterations
// repeat exactly and expectations are plain arithmetic.
inline wanlab::harness::LinkModel steady_links(const wanlab::emulator::Scenario& scenario) {
  wanlab::harness::LinkModel model =
      wanlab::harness::link_model_for(scenario, 1.0);  // the test experiments run at scale 1
  model.tcp_dynamics = false;
  model.payload_share = 1.0;
  return model;
}

// Two DCs, a and b, one host each, joined at `rate` by one WAN link whose
// keys are `link_keys` (lines, "delay = \"10ms\"\n..."); the caller may go
// on writing the link's table (a schedule) or more tables after it.
inline std::string two_dcs_text(const std::string& rate, const std::string& link_keys) {
  return "name = \"two\"\n[defaults]\nrate = \"" + rate +
         "\"\n[[dc]]\nname = \"a\"\nhosts = 1\n[[dc]]\nname = \"b\"\nhosts = 1\n"
         "[[link]]\nbetween = [\"a\", \"b\"]\n" +
         link_keys;
}

inline wanlab::emulator::Scenario three_dcs() { return wanlab::emulator::parse_scenario(kThreeDcScenario, "t3.toml"); }

// An experiment with given compute times (ms) over the three-DC scenario;
// `extra` is appended (top-level keys must come before any table, so it is
// inserted before [model]).
inline wanlab::harness::Experiment experiment(const std::string& top_level, int pp, int dp, int microbatches,
                                              double forward_ms = 1, double backward_ms = 2,
                                              const std::string& gpus = "") {
  std::string toml = "name = \"x\"\ntestbed = \"t3.toml\"\n" + top_level + "\n[model]\nlayers = 64\n" +
                     "hidden = 1024\nseq_len = 1024\nmicrobatches = " + std::to_string(microbatches) +
                     "\n[parallel]\npp = " + std::to_string(pp) + "\ndp = " + std::to_string(dp) +
                     "\n[compute]\nforward_ms = " + std::to_string(forward_ms) +
                     "\nbackward_ms = " + std::to_string(backward_ms) + "\n" + gpus;
  return wanlab::harness::parse_experiment(toml, "x.toml");
}

// The ExperimentError `action` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const wanlab::harness::ExperimentError& error) {
    return error.what();
  }
  return "(no error)";
}

// A small valid experiment of 10 lines (atlas, 2 stages of 4 layers, given
// compute times) that the bad-file tables edit.
inline const std::string kSmallExperiment = R"(name = "e"
testbed = "t3.toml"
schedule = "atlas"
[model]
layers = 4
[parallel]
pp = 2
[compute]
forward_ms = 1
backward_ms = 2
)";

// Edits of a test's base file, by 1-based line: `base` with `line` replaced by
// `text` ("" deletes it), with `text` inserted before `line`, or its first
// `count` lines. The bad-file tables build their cases with these.
inline std::string with_line(const std::string& base, int line, const std::string& text) {
  std::string result;
  std::size_t start = 0;
  for (int current = 1; start < base.size(); ++current) {
    std::size_t end = base.find('\n', start);
    if (current != line) {
      result += base.substr(start, end - start) + "\n";
    } else if (!text.empty()) {
      result += text + "\n";
    }
    start = end + 1;
  }
  return result;
}

inline std::string inserted(const std::string& base, int line, const std::string& text) {
  std::string result;
  std::size_t start = 0;
  for (int current = 1; start < base.size(); ++current) {
    std::size_t end = base.find('\n', start);
    if (current == line) result += text + "\n";
    result += base.substr(start, end - start + 1);
    start = end + 1;
  }
  return result;
}

inline std::string first_lines(const std::string& base, int count) {
  std::size_t end = 0;
  for (int line = 0; line < count; ++line) end = base.find('\n', end) + 1;
  return base.substr(0, end);
}

// A bad input and the start of the one-line error it must give.
struct BadFile {
  const char* description;
  std::string toml;
  std::string expected;
};

// Every case's error starts with its expected text and is one line.
inline void expect_errors(const std::vector<BadFile>& cases,
                          const std::function<std::string(const std::string&)>& error_of) {
  for (const BadFile& bad : cases) {
    std::string message = error_of(bad.toml);
    BOOST_TEST(message.find(bad.expected) == 0, bad.description << ": " << message);
    BOOST_TEST(wanlab::base::one_line_problem(message) == "", bad.description << ": " << message);
  }
}

inline int count_substring(std::string_view text, std::string_view piece) {
  int count = 0;
  for (std::size_t at = text.find(piece); at != std::string_view::npos; at = text.find(piece, at + piece.size())) {
    ++count;
  }
  return count;
}

// A simulated run the report tests read: 1F1B, pp 4 over a, b, c, a; dp 2;
// 4 microbatches of 5/10 ms; two iterations that repeat (steady links).
struct SimulatedRun {
  wanlab::emulator::Scenario scenario = three_dcs();
  wanlab::harness::Plan plan;
  wanlab::harness::RunRecord record;
};

inline SimulatedRun pp_across_dc_run() {
  SimulatedRun run;
  run.plan = wanlab::harness::make_plan(experiment("schedule = \"1f1b\"\nstreams = 2", 4, 2, 4, 5, 10), run.scenario);
  run.record = wanlab::harness::simulate(run.plan, run.scenario, steady_links(run.scenario), 2);
  return run;
}

}  // namespace harness_test
