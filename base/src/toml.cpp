#include "wanlab/base/toml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "wanlab/base/parse.hpp"
#include "wanlab/base/suggest.hpp"

namespace wanlab::base {

std::string describe_value(const toml::node& node) {
  if (const auto* text = node.as_string()) return quoted(text->get());
  if (const auto* integer = node.as_integer()) return std::to_string(integer->get());
  if (const auto* number = node.as_floating_point()) return fmt::format("{}", number->get());
  if (const auto* flag = node.as_boolean()) return flag->get() ? "true" : "false";
  if (node.is_table()) return "a table";
  if (node.is_array()) return "an array";
  return "a date/time";
}

std::string one_line(std::string_view text) {
  std::string line;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += ' ';
    } else if (byte < 0x20 || byte == 0x7f) {
      line += fmt::format("\\x{:02x}", byte);
    } else {
      line += c;
    }
  }
  return line;
}

std::string source_position(const toml::source_region& region, const std::string& path) {
  const std::string& file = region.path ? *region.path : path;
  if (region.begin.line == 0) return file;
  return fmt::format("{}:{}:{}", file, region.begin.line, region.begin.column);
}

std::string TomlReader::where(const toml::source_region& region) const { return source_position(region, path_); }

void TomlReader::raise(const std::string& message) const { throw std::runtime_error(message); }

void TomlReader::throw_error(const std::string& message) const {
  raise(message);
  throw std::runtime_error(message);  // an override that returned
}

void TomlReader::fail(const toml::source_region& region, std::string_view message) const {
  throw_error(fmt::format("{}: {}", where(region), message));
}

void TomlReader::fail(const toml::node& node, std::string_view field, std::string_view message) const {
  throw_error(fmt::format("{}: {}: {}", where(node.source()), field, message));
}

void TomlReader::fail_at_start(std::string_view message) const {
  throw_error(fmt::format("{}:1:1: {}", path_, message));
}

toml::table TomlReader::parse_toml(std::string_view text) const {
  try {
    return toml::parse(text, std::string_view(path_));
  } catch (const toml::parse_error& error) {
    fail(error.source(), one_line(error.description()));
  }
}

bool TomlReader::comes_before(const toml::key& a, const toml::key& b) {
  const auto& pa = a.source().begin;
  const auto& pb = b.source().begin;
  return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
}

void TomlReader::check_known_keys(const toml::table& table, std::span<const std::string_view> known,
                                  std::string_view table_label, std::span<const std::string_view> more_known) const {
  auto is_known = [&](std::string_view name) {
    return std::find(known.begin(), known.end(), name) != known.end() ||
           std::find(more_known.begin(), more_known.end(), name) != more_known.end();
  };
  const toml::key* first_unknown = nullptr;
  for (auto&& [key, node] : table) {
    if (!is_known(key.str()) && (first_unknown == nullptr || comes_before(key, *first_unknown))) first_unknown = &key;
  }
  if (first_unknown == nullptr) return;
  std::vector<std::string_view> candidates(known.begin(), known.end());
  candidates.insert(candidates.end(), more_known.begin(), more_known.end());
  fail(first_unknown->source(), fmt::format("unknown key {} in {}{}", quoted(first_unknown->str()), table_label,
                                            did_you_mean(first_unknown->str(), candidates)));
}

const toml::table* TomlReader::optional_table(const toml::table& parent, std::string_view key) const {
  const toml::node* node = parent.get(key);
  if (node == nullptr) return nullptr;
  if (!node->is_table())
    fail(node->source(), fmt::format("{}: expected a table ([{}]), got {}", key, key, describe_value(*node)));
  return node->as_table();
}

std::vector<const toml::table*> TomlReader::array_of_tables(const toml::table& parent, std::string_view key) const {
  std::vector<const toml::table*> tables;
  const toml::node* node = parent.get(key);
  if (node == nullptr) return tables;
  const toml::array* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    fail(node->source(),
         fmt::format("{}: expected an array of tables ([[{}]]), got {}", key, key, describe_value(*node)));
  }
  for (const toml::node& element : *array) tables.push_back(element.as_table());
  return tables;
}

const std::string& TomlReader::expect_string(const toml::node& node, std::string_view field,
                                             std::string_view expected) const {
  const auto* text = node.as_string();
  if (text == nullptr)
    fail(node.source(), fmt::format("{}: expected {}, got {}", field, expected, describe_value(node)));
  return text->get();
}

const std::string& TomlReader::expect_file_name(const toml::node& node, std::string_view field,
                                                std::string_view expected) const {
  const std::string& name = expect_string(node, field, expected);
  if (name.empty()) fail(node, field, "must not be empty");
  const auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  if (std::any_of(name.begin(), name.end(), control))
    fail(node, field, fmt::format("a file name with a control character: {}", quoted(name)));
  return name;
}

}  // namespace wanlab::base
