// The field readers the experiment parser and the [prefill] reader share.
#include "experiment/toml_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "experiment/text.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::harness::detail {

using base::describe_value;

void fail_field(const Experiment& experiment, const std::string& field, std::string_view message) {
  std::string where = experiment.where(field);
  if (where.starts_with("--")) throw ExperimentError(fmt::format("{}: {}", where, message));
  throw ExperimentError(fmt::format("{}: {}: {}", where, field, message));
}

std::string resolve_beside(const std::string& file, const std::string& path) {
  std::filesystem::path given(path);
  if (given.is_absolute()) return given.lexically_normal().string();
  std::filesystem::path directory = std::filesystem::path(file).parent_path();
  return (directory / given).lexically_normal().string();
}

FieldReader::FieldReader(std::string path) : TomlReader(std::move(path)) { experiment_.path = this->path(); }

void FieldReader::remember(const std::string& field, const toml::node& node) {
  experiment_.positions[field] = where(node.source());
}

std::optional<std::int64_t> FieldReader::read_int(const toml::table& table, std::string_view key,
                                                  const std::string& field, IntRange range) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  const auto* integer = node->as_integer();
  if (integer == nullptr || integer->get() < range.min || integer->get() > range.max) {
    fail(node->source(), fmt::format("{}: expected an integer from {} to {}, got {}", field, range.min, range.max,
                                     describe_value(*node)));
  }
  remember(field, *node);
  return integer->get();
}

std::optional<double> FieldReader::read_positive(const toml::table& table, std::string_view key,
                                                 const std::string& field, double max, double min) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  std::optional<double> number;
  if (const auto* floating = node->as_floating_point()) number = floating->get();
  if (const auto* integer = node->as_integer()) number = static_cast<double>(integer->get());
  if (!number || !(min > 0 ? *number >= min : *number > 0) || *number > max) {
    fail(node->source(), min > 0 ? fmt::format("{}: expected a number from {:g} to {:g}, got {}", field, min, max,
                                               describe_value(*node))
                                 : fmt::format("{}: expected a number greater than 0 and at most {}, got {}", field,
                                               max, describe_value(*node)));
  }
  remember(field, *node);
  return number;
}

std::optional<double> FieldReader::read_rate(const toml::table& table, std::string_view key, const std::string& field) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  const auto bps = parse_string(*node, field, R"(a rate like "400gbit")", emulator::units::parse_rate);
  remember(field, *node);
  return static_cast<double>(bps);
}

std::optional<std::uint64_t> FieldReader::read_time(const toml::table& table, std::string_view key,
                                                    const std::string& field, std::uint64_t max_ns) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  const std::uint64_t ns = parse_string(*node, field, R"(a time like "30s")", emulator::units::parse_time);
  if (ns > max_ns)
    fail(node->source(), fmt::format("{}: expected a time from 0s to {}, got {}", field,
                                     emulator::units::format_time(max_ns), describe_value(*node)));
  remember(field, *node);
  return ns;
}

std::optional<bool> FieldReader::read_bool(const toml::table& table, std::string_view key, const std::string& field) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  const auto* flag = node->as_boolean();
  if (flag == nullptr) {
    fail(node->source(), fmt::format("{}: expected true or false, got {}", field, describe_value(*node)));
  }
  remember(field, *node);
  return flag->get();
}

int FieldReader::to_int(std::optional<std::int64_t> value, int fallback) {
  return value ? static_cast<int>(*value) : fallback;
}

}  // namespace wanlab::harness::detail
