// What results.json's codec (results_json.cpp) and the digest compare reads
// (results_digest.cpp) share: the members of an object read with errors that
// name where they sit, and the readers of the parts both read.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wanlab/harness/record/results.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"

namespace wanlab::harness::detail {

using Json = nlohmann::ordered_json;

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

// The prefill figures compare shows: mean utilization with prefill, tokens/s,
// requests served, rejected and failed, TTFT p50 and p99, training delay.
PrefillSummary prefill_shown(const Fields& prefill);
// A bubble_prediction_error_* object: start_p50, start_p90, length_p50, length_p90.
BubbleErrors bubble_errors_from(const Fields& errors);
EmulationHealth emulation_from(const Fields& emulation);
TrainingSlowdown slowdown_from(const Fields& slowdown);
EmulationFigures emulation_figures(const Fields& emulation);
// mean_iteration_s, mean_gpu_utilization and mean_bubble_fraction.
void read_shown_means(const Fields& root, RunSummary& run);
ConfigurationView view_of(const Fields& configuration);
// A request_outcomes row's columns.
inline constexpr const char* kRequestColumns[] = {"id", "arrival_s", "prompt_tokens", "state", "ttft_s", "reason"};
// One row of prefill.request_outcomes, checked ("WHERE: is not [id, arrival_s, ...]"
// or the column named): `where` is "LABEL.prefill.request_outcomes[3]".
RequestRow request_from(const Json& row, const std::string& where);

// A JSON error on one line: "line 3, column 13: what", or "what" without a
// `position` (std::string_view::npos). Nothing of the text is quoted.
std::string json_error(std::string_view text, std::size_t position, const nlohmann::detail::exception& error);

// DIR/results.json for a directory, else `path`.
std::string results_file(const std::string& path);
// The file's text (a regular file, at most 256 MiB); ResultsError naming it.
std::string read_results_text(const std::string& file);

}  // namespace wanlab::harness::detail
