// Reading the fields of an experiment file: what the experiment parser and the
// [prefill] section's reader share, so that every field answers mistakes the
// same way ("file:line:column: field: expected ..., got ...") and records
// where it came from (Experiment::positions) for errors found later.
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "wanlab/harness/experiment.hpp"

namespace wanlab::harness::detail {

struct IntRange {
  std::int64_t min;
  std::int64_t max;
};

// "e.toml:7:6: parallel.pp: <message>" where the file gave the field,
// "--placement: <message>" where an option did, "e.toml: parallel.pp: <message>"
// where it is a default.
[[noreturn]] void fail_field(const Experiment& experiment, const std::string& field, std::string_view message);

// An experiment from a document already parsed (`wanlab whatif` sets swept
// keys in it first): errors name each node's own file, so a value moved in
// from a sweep file is named at its line there.
Experiment parse_experiment_table(const toml::table& root, const std::string& path);

// `path` as written in the file at `file`: absolute as it is, relative against
// that file's directory ("../three-dc.toml" beside "x/e.toml" -> "three-dc.toml").
std::string resolve_beside(const std::string& file, const std::string& path);

// Owns the Experiment being read from the file at `path`.
class FieldReader {
 public:
  explicit FieldReader(std::string path);

  Experiment& experiment() { return experiment_; }

  std::string where(const toml::source_region& region) const;
  [[noreturn]] void fail(const toml::source_region& region, std::string_view message) const;
  [[noreturn]] void fail_at_start(std::string_view message) const;
  void remember(const std::string& field, const toml::node& node);

  toml::table parse_toml(std::string_view text) const;
  static bool comes_before(const toml::key& a, const toml::key& b);
  // Reports the first unknown key in file order.
  void check_known_keys(const toml::table& table, std::span<const std::string_view> known,
                        std::string_view table_label) const;

  const toml::table* optional_table(const toml::table& parent, std::string_view key) const;
  const std::string& expect_string(const toml::node& node, std::string_view field, std::string_view expected) const;
  std::optional<std::int64_t> read_int(const toml::table& table, std::string_view key, const std::string& field,
                                       IntRange range);
  // A number in (0, max], or in [min, max] when min > 0; integers are accepted
  // ("312" as well as "312.0").
  std::optional<double> read_positive(const toml::table& table, std::string_view key, const std::string& field,
                                      double max, double min = 0);
  std::optional<bool> read_bool(const toml::table& table, std::string_view key, const std::string& field);
  static int to_int(std::optional<std::int64_t> value, int fallback);
  // A string value through `parse` (which throws std::invalid_argument, e.g.
  // emulator::units::parse_rate), its message prefixed with the field.
  template <typename Parse>
  auto parse_string(const toml::node& node, const std::string& field, std::string_view expected, Parse parse) const {
    const std::string& text = expect_string(node, field, expected);
    try {
      return parse(text);
    } catch (const std::invalid_argument& error) {
      fail(node.source(), fmt::format("{}: {}", field, error.what()));
    }
  }

 protected:
  std::string path_;
  Experiment experiment_;
};

}  // namespace wanlab::harness::detail
