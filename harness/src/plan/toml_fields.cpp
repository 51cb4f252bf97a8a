// The field readers the experiment parser and the [prefill] reader share.
#include "toml_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "text.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/toml_input.hpp"

namespace wanlab::harness::detail {

using emulator::describe_value;
using emulator::one_line;

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

FieldReader::FieldReader(std::string path) : path_(std::move(path)) { experiment_.path = path_; }

std::string FieldReader::where(const toml::source_region& region) const {
  return emulator::source_position(region, path_);
}

void FieldReader::fail(const toml::source_region& region, std::string_view message) const {
  throw ExperimentError(fmt::format("{}: {}", where(region), message));
}

void FieldReader::fail_at_start(std::string_view message) const {
  throw ExperimentError(fmt::format("{}:1:1: {}", path_, message));
}

void FieldReader::remember(const std::string& field, const toml::node& node) {
  experiment_.positions[field] = where(node.source());
}

toml::table FieldReader::parse_toml(std::string_view text) const {
  try {
    return toml::parse(text, std::string_view(path_));
  } catch (const toml::parse_error& error) {
    fail(error.source(), one_line(error.description()));
  }
}

bool FieldReader::comes_before(const toml::key& a, const toml::key& b) {
  const auto& pa = a.source().begin;
  const auto& pb = b.source().begin;
  return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
}

void FieldReader::check_known_keys(const toml::table& table, std::span<const std::string_view> known,
                                   std::string_view table_label) const {
  const toml::key* first_unknown = nullptr;
  for (auto&& [key, node] : table) {
    bool is_known = std::find(known.begin(), known.end(), key.str()) != known.end();
    if (!is_known && (first_unknown == nullptr || comes_before(key, *first_unknown))) {
      first_unknown = &key;
    }
  }
  if (first_unknown == nullptr) return;
  fail(first_unknown->source(), fmt::format("unknown key {} in {}{}", base::quoted(first_unknown->str()), table_label,
                                            suggestion(first_unknown->str(), known)));
}

const toml::table* FieldReader::optional_table(const toml::table& parent, std::string_view key) const {
  const toml::node* node = parent.get(key);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) {
    fail(node->source(), fmt::format("{}: expected a table ([{}]), got {}", key, key, describe_value(*node)));
  }
  return node->as_table();
}

const std::string& FieldReader::expect_string(const toml::node& node, std::string_view field,
                                              std::string_view expected) const {
  const auto* text = node.as_string();
  if (text == nullptr) {
    fail(node.source(), fmt::format("{}: expected {}, got {}", field, expected, describe_value(node)));
  }
  return text->get();
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
