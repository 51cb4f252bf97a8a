// Reading the fields of an experiment file: what the experiment parser and the
// [prefill] section's reader share, so that every field answers mistakes the
// same way ("file:line:column: field: expected ..., got ...") and records
// where it came from (Experiment::positions) for errors found later. The
// skeleton (positions, parse errors, unknown keys with did-you-mean) is
// base::TomlReader, which the scenario parser and the state files use too.
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "wanlab/base/toml.hpp"
#include "wanlab/harness/experiment/experiment.hpp"

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

// Owns the Experiment being read from the file at `path`; errors are
// ExperimentErrors.
class FieldReader : public base::TomlReader {
 public:
  explicit FieldReader(std::string path);

  Experiment& experiment() { return experiment_; }

  void remember(const std::string& field, const toml::node& node);

  std::optional<std::int64_t> read_int(const toml::table& table, std::string_view key, const std::string& field,
                                       IntRange range);
  // A number in (0, max], or in [min, max] when min > 0; integers are accepted
  // ("312" as well as "312.0").
  std::optional<double> read_positive(const toml::table& table, std::string_view key, const std::string& field,
                                      double max, double min = 0);
  std::optional<bool> read_bool(const toml::table& table, std::string_view key, const std::string& field);
  // A rate as scenario files write them ("400gbit"), in bits per second.
  std::optional<double> read_rate(const toml::table& table, std::string_view key, const std::string& field);
  // A time as scenario files write them ("90s", "250ms"), in nanoseconds, at most `max_ns`.
  std::optional<std::uint64_t> read_time(const toml::table& table, std::string_view key, const std::string& field,
                                         std::uint64_t max_ns);
  static int to_int(std::optional<std::int64_t> value, int fallback);

 protected:
  [[noreturn]] void raise(const std::string& message) const override { throw ExperimentError(message); }

  Experiment experiment_;
};

}  // namespace wanlab::harness::detail
